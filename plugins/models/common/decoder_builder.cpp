// A pre-norm decoder with some of: q/k/v biases, per-head q/k RMSNorms, (1 + w) norms, GeGLU,
// scaled embeddings, post-norms, soft caps, a query scale, and a sliding window on every layer or
// on alternate ones.
#include "decoder_builder.h"
#include "decoder_layers.h"

#include <ft/nn/l2_norm.h>
#include <ft/nn/mixture_of_experts.h>
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
  if (c.layer_rotates(layer)) {
    if (c.attention_chunk_size > 0) o.mask = AttentionMask::chunked_local(c.attention_chunk_size);
    o.norm_after_positions = c.qk_l2_norm;
  } else {
    o.query_temperature = c.nope_query_temperature;
  }
  return o;
}

FeedForwardBlock feed_forward_block(const DecoderConfig& c, std::int64_t layer) {
  if (!c.layer_has_experts(layer)) return feed_forward(c.embed_dim, c.intermediate_dim, c.activation);
  const ExpertLayers& e = c.experts;
  MixtureOfExpertsOptions o;
  o.dim = c.embed_dim;
  o.expert_hidden_dim = e.expert_dim;
  o.router = {c.embed_dim, e.num_experts, e.top_k, e.score, e.normalize_top_k};
  o.weight_expert_inputs = e.weight_expert_inputs;
  o.shared_expert_hidden_dim = e.shared_expert_dim;
  o.activation = c.activation;
  return mixture_of_experts(o);
}

Norm decoder_norm(const DecoderConfig& c, std::int64_t dim) {
  return rms_norm(dim, c.norm_eps, c.norm_adds_one ? NormScale::OnePlusWeight : NormScale::Weight);
}

}  // namespace

std::vector<TransformerLayer> build_decoder_layers(const DecoderConfig& c) {
  auto norm = [&](std::int64_t dim) { return decoder_norm(c, dim); };
  const auto positions = rotary_embedding(c.resolved_head_dim(), c.rope_base, c.rope_scaling);
  std::vector<TransformerLayer> layers;
  for (std::int64_t i = 0; i < c.num_layers; ++i) {
    AttentionBlocks blocks{c.layer_rotates(i) ? positions : nullptr, nullptr, nullptr};
    if (c.qk_norm) {
      blocks.q_norm = norm(c.resolved_head_dim());
      blocks.k_norm = norm(c.resolved_head_dim());
    } else if (c.qk_l2_norm && c.layer_rotates(i)) {
      blocks.q_norm = l2_norm(c.norm_eps);
      blocks.k_norm = l2_norm(c.norm_eps);
    }
    TransformerLayerParts parts;
    parts.sa_norm = norm(c.embed_dim);
    parts.attn = Attention(attention_options(c, i), std::move(blocks));
    if (c.post_norms) parts.sa_scale = norm(c.embed_dim);
    parts.mlp_norm = norm(c.embed_dim);
    parts.mlp = feed_forward_block(c, i);
    if (c.post_norms) parts.mlp_scale = norm(c.embed_dim);
    layers.emplace_back(std::move(parts));
  }
  return layers;
}

TransformerDecoder build_decoder(const DecoderConfig& c) {
  DecoderOptions options;
  options.vocab_size = c.vocab_size;
  options.embed_dim = c.embed_dim;
  options.max_seq_len = c.max_seq_len;
  options.tie_word_embeddings = c.tie_word_embeddings;
  options.scale_embeddings = c.scale_embeddings;
  options.final_logit_softcap = c.final_logit_softcap;
  options.router_aux_loss_coef = c.experts.router_aux_loss_coef;
  return TransformerDecoder(options, build_decoder_layers(c), decoder_norm(c, c.embed_dim));
}

}  // namespace ft_models
