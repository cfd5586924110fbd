#include "decoder_config.h"

#include <cmath>

namespace ft_models {

double DecoderConfig::attention_scale() const {
  const double scalar = query_pre_attn_scalar > 0 ? query_pre_attn_scalar : static_cast<double>(resolved_head_dim());
  return 1.0 / std::sqrt(scalar);
}

std::int64_t DecoderConfig::layer_sliding_window(std::int64_t layer) const {
  if (sliding_window <= 0) return 0;
  if (sliding_window_layers == SlidingWindowLayers::EvenIndexed && layer % 2 != 0) return 0;
  return sliding_window;
}

bool DecoderConfig::layer_has_experts(std::int64_t layer) const {
  return experts.num_experts > 0 && static_cast<std::size_t>(layer) < experts.sparse.size() &&
         experts.sparse[static_cast<std::size_t>(layer)];
}

bool DecoderConfig::layer_rotates(std::int64_t layer) const {
  return rope_layers.empty() || rope_layers[static_cast<std::size_t>(layer)];
}

std::string DecoderConfig::problem() const {
  auto positive = [](std::int64_t v) { return v > 0; };
  if (!positive(vocab_size)) return "vocab_size must be positive";
  if (!positive(num_layers)) return "num_layers must be positive";
  if (!positive(num_heads)) return "num_heads must be positive";
  if (!positive(num_kv_heads)) return "num_kv_heads must be positive";
  if (!positive(embed_dim)) return "embed_dim must be positive";
  if (!positive(intermediate_dim)) return "intermediate_dim must be positive";
  if (!positive(max_seq_len)) return "max_seq_len must be positive";
  if (num_heads % num_kv_heads != 0)
    return "num_heads (" + std::to_string(num_heads) + ") must be a multiple of num_kv_heads (" +
           std::to_string(num_kv_heads) + ")";
  if (head_dim <= 0 && embed_dim % num_heads != 0)
    return "embed_dim (" + std::to_string(embed_dim) + ") must be divisible by num_heads (" +
           std::to_string(num_heads) + ")";
  if (resolved_head_dim() % 2 != 0) return "the head dimension must be even for RoPE";
  if (!(norm_eps > 0)) return "norm_eps must be positive";
  if (!(rope_base > 1)) return "rope_base must be greater than 1";
  if (rope_scaling) {
    const auto& s = *rope_scaling;
    if (!(s.factor >= 1)) return "scale_factor must be at least 1";
    if (!(s.high_freq_factor >= s.low_freq_factor)) return "rope high_freq_factor must not be below low_freq_factor";
    if (s.original_max_position_embeddings <= 0) return "rope original_max_position_embeddings must be positive";
  }
  if (attn_logit_softcap < 0) return "the attention logit soft cap must be positive (or 0: none)";
  if (final_logit_softcap < 0) return "the final logit soft cap must be positive (or 0: none)";
  if (query_pre_attn_scalar < 0) return "query_pre_attn_scalar must be positive (or 0: head_dim)";
  if (sliding_window < 0) return "sliding_window must be positive (or 0: none)";
  if (experts.num_experts > 0) {
    if (experts.top_k <= 0 || experts.top_k > experts.num_experts)
      return "experts per token (" + std::to_string(experts.top_k) +
             ") must be in [1, the number of experts = " + std::to_string(experts.num_experts) + "]";
    if (experts.expert_dim <= 0) return "the experts' MLP width must be positive";
    if (experts.sparse.size() != static_cast<std::size_t>(num_layers))
      return "the sparse-layer pattern covers " + std::to_string(experts.sparse.size()) + " layers, the model has " +
             std::to_string(num_layers);
    if (experts.router_aux_loss_coef < 0) return "router_aux_loss_coef must not be negative";
  }
  if (!rope_layers.empty() && rope_layers.size() != static_cast<std::size_t>(num_layers))
    return "the rotary-layer pattern covers " + std::to_string(rope_layers.size()) + " layers, the model has " +
           std::to_string(num_layers);
  if (attention_chunk_size < 0) return "attention_chunk_size must be positive (or 0: none)";
  if (nope_query_temperature && !(nope_query_temperature->floor_scale > 0)) return "floor_scale must be positive";
  return {};
}

std::int64_t DecoderConfig::parameter_count() const {
  const std::int64_t hd = resolved_head_dim();
  const std::int64_t q_width = num_heads * hd, kv_width = num_kv_heads * hd;
  std::int64_t attention = embed_dim * q_width + 2 * embed_dim * kv_width + q_width * embed_dim;
  if (qkv_bias) attention += q_width + 2 * kv_width;
  if (qk_norm) attention += 2 * hd;
  const std::int64_t dense = 3 * embed_dim * intermediate_dim;
  const std::int64_t sparse = experts.num_experts * (3 * embed_dim * experts.expert_dim + embed_dim) +
                              3 * embed_dim * experts.shared_expert_dim;
  const std::int64_t norms = (post_norms ? 4 : 2) * embed_dim;
  const std::int64_t embedding = vocab_size * embed_dim;
  std::int64_t total = embedding + embed_dim + (tie_word_embeddings ? 0 : embedding);
  for (std::int64_t i = 0; i < num_layers; ++i) total += attention + norms + (layer_has_experts(i) ? sparse : dense);
  return total;
}

std::int64_t scale_hidden_dim_for_mlp(std::int64_t dim, std::int64_t multiple_of) {
  std::int64_t hidden = 4 * dim;
  hidden = (2 * hidden) / 3;
  return multiple_of * ((hidden + multiple_of - 1) / multiple_of);
}

}  // namespace ft_models
