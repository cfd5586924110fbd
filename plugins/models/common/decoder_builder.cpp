// A pre-norm decoder with some of: q/k/v biases, per-head q/k RMSNorms, (1 + w) norms, GeGLU,
// scaled embeddings, post-norms, soft caps, a query scale, and a sliding window on every layer or
// on alternate ones.
#include "decoder_builder.h"

#include <ft/nn/rms_norm.h>

#include <memory>
#include <optional>
#include <vector>

namespace ft_models {

namespace {

using namespace ft::nn;

AttentionOptions attention_options(const DecoderConfig& c, std::int64_t layer) {
  AttentionOptions o;
  o.embed_dim = c.embed_dim;
  o.num_heads = c.num_heads;
  o.num_kv_heads = c.num_kv_heads;
  o.head_dim = c.resolved_head_dim();
  o.projection_bias = c.qkv_bias;
  if (c.query_pre_attn_scalar > 0) o.query_scale = c.attention_scale();
  o.softcap = c.attn_logit_softcap;
  if (const std::int64_t window = c.layer_sliding_window(layer); window > 0)
    o.mask = AttentionMask::sliding_window(window);
  return o;
}

}  // namespace

TransformerDecoder build_decoder(const DecoderConfig& c) {
  const NormScale scaling = c.norm_adds_one ? NormScale::OnePlusWeight : NormScale::Weight;
  auto norm = [&](std::int64_t dim) { return rms_norm(dim, c.norm_eps, scaling); };
  const auto positions = rotary_embedding(c.resolved_head_dim(), c.rope_base, c.rope_scaling);
  std::vector<TransformerLayer> layers;
  for (std::int64_t i = 0; i < c.num_layers; ++i) {
    AttentionBlocks blocks{positions, nullptr, nullptr};
    if (c.qk_norm) {
      blocks.q_norm = norm(c.resolved_head_dim());
      blocks.k_norm = norm(c.resolved_head_dim());
    }
    TransformerLayerParts parts;
    parts.sa_norm = norm(c.embed_dim);
    parts.attn = Attention(attention_options(c, i), std::move(blocks));
    if (c.post_norms) parts.sa_scale = norm(c.embed_dim);
    parts.mlp_norm = norm(c.embed_dim);
    parts.mlp = feed_forward(c.embed_dim, c.intermediate_dim, c.activation);
    if (c.post_norms) parts.mlp_scale = norm(c.embed_dim);
    layers.emplace_back(std::move(parts));
  }
  DecoderOptions options;
  options.vocab_size = c.vocab_size;
  options.embed_dim = c.embed_dim;
  options.max_seq_len = c.max_seq_len;
  options.tie_word_embeddings = c.tie_word_embeddings;
  options.scale_embeddings = c.scale_embeddings;
  options.final_logit_softcap = c.final_logit_softcap;
  return TransformerDecoder(options, std::move(layers), norm(c.embed_dim));
}

}  // namespace ft_models
