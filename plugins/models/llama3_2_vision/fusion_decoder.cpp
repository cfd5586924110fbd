#include "fusion_decoder.h"

#include "decoder_layers.h"

#include <ft/errors.h>
#include <ft/nn/cross_attention.h>
#include <ft/nn/feed_forward.h>
#include <ft/nn/parameter_device.h>
#include <ft/nn/rms_norm.h>
#include <ft/nn/tanh_gate.h>
#include <ft/text.h>

#include <ATen/ATen.h>

#include <utility>

namespace ft_models {

using namespace ft::nn;

namespace {

CrossAttentionLayer cross_attention_layer(const DecoderConfig& c) {
  const std::int64_t head_dim = c.resolved_head_dim();
  CrossAttentionOptions attention;
  attention.embed_dim = c.embed_dim;
  attention.encoder_dim = c.embed_dim;  // the projector maps the image states to the text's width
  attention.num_heads = c.num_heads;
  attention.num_kv_heads = c.num_kv_heads;
  attention.head_dim = head_dim;
  CrossAttentionLayerParts parts;
  parts.ca_norm = rms_norm(c.embed_dim, c.norm_eps);
  parts.attn = CrossAttention(attention, rms_norm(head_dim, c.norm_eps), rms_norm(head_dim, c.norm_eps));
  parts.ca_scale = tanh_gate(0.0);
  parts.mlp_norm = rms_norm(c.embed_dim, c.norm_eps);
  parts.mlp = feed_forward(c.embed_dim, c.intermediate_dim, c.activation);
  parts.mlp_scale = tanh_gate(0.0);
  return CrossAttentionLayer(std::move(parts));
}

}  // namespace

FusionDecoderImpl::FusionDecoderImpl(const FusionDecoderConfig& config) : config_(config) {
  if (std::string problem = config.problem(); !problem.empty()) throw ft::Error("fusion decoder: " + problem);
  const DecoderConfig& c = config.text;
  const auto options = parameter_options();
  tok_embeddings = register_parameter("tok_embeddings", at::zeros({c.vocab_size, c.embed_dim}, options));
  fusion_embeddings =
      register_parameter("fusion_embeddings", at::zeros({config.fusion_vocab_size, c.embed_dim}, options));
  layers_ = register_module("layers", torch::nn::ModuleList());
  std::vector<TransformerLayer> built = build_decoder_layers(c);
  std::size_t next_self = 0;
  for (std::int64_t i = 0; i < config.total_layers(); ++i) {
    if (config.is_cross_attention_layer(i)) {
      cross_attention_layers.push_back(cross_attention_layer(c));
      layers_->push_back(cross_attention_layers.back());
    } else {
      self_attention_layers.push_back(std::move(built[next_self++]));
      layers_->push_back(self_attention_layers.back());
    }
  }
  norm = register_module("norm", rms_norm(c.embed_dim, c.norm_eps));
  output = register_parameter("output", at::zeros({c.vocab_size, c.embed_dim}, options));
}

at::Tensor FusionDecoderImpl::hidden(const at::Tensor& tokens, const at::Tensor& positions, const at::Tensor& encoder,
                                     const at::Tensor& encoder_allowed) const {
  const std::int64_t vocab = config_.text.vocab_size;
  const std::int64_t rows = vocab + config_.fusion_vocab_size;
  if (tokens.numel() > 0 && (tokens.min().item<std::int64_t>() < 0 || tokens.max().item<std::int64_t>() >= rows))
    throw ft::Error("fusion decoder: token ids must lie in [0, " + std::to_string(rows) + "), got [" +
                    std::to_string(tokens.min().item<std::int64_t>()) + ", " +
                    std::to_string(tokens.max().item<std::int64_t>()) + "]");
  // Two lookups and a choice, not one table: the fusion rows stay a parameter of their own
  // (trainable apart from the vocabulary's), and no [vocab + fusion, dim] copy is made per step.
  static const LayerRunner plain;
  const LayerRunner& run = runner ? *runner : plain;
  run.before(run.embedding_unit);
  at::Tensor x = at::embedding(tok_embeddings, tokens.clamp_max(vocab - 1));
  if (config_.fusion_vocab_size > 0)
    x = at::where(tokens.ge(vocab).unsqueeze(-1), at::embedding(fusion_embeddings, (tokens - vocab).clamp_min(0)), x);
  x = run.after(run.embedding_unit, std::move(x));
  const at::Tensor pos = positions.defined() ? positions : at::arange(tokens.size(1), tokens.options());
  std::size_t next_self = 0, next_cross = 0;
  for (std::int64_t i = 0; i < config_.total_layers(); ++i) {
    const std::size_t unit = first_unit + static_cast<std::size_t>(i);
    if (config_.is_cross_attention_layer(i)) {
      const CrossAttentionLayer layer = cross_attention_layers[next_cross++];
      if (!encoder.defined()) continue;  // text alone: Hugging Face skips the layer
      // Never checkpointed: it reads the image states, whose gradient a recompute from x alone
      // would lose (torchtune checkpoints only self-attention layers too).
      x = run.run(unit, x, [layer, encoder, encoder_allowed](const at::Tensor& input) {
        return layer->forward(input, encoder, encoder_allowed);
      });
    } else {
      const TransformerLayer layer = self_attention_layers[next_self++];
      x = run.run(unit, x, [layer, pos](const at::Tensor& input) { return layer->forward(input, pos, at::Tensor()); });
    }
  }
  return norm->forward(x);
}

at::Tensor FusionDecoderImpl::logits(const at::Tensor& hidden) const { return at::linear(hidden, output_weight()); }

const at::Tensor& FusionDecoderImpl::output_weight() const {
  if (runner) runner->before(runner->output_unit);
  return output;
}

}  // namespace ft_models
