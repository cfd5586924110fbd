// Grouped-query self-attention with rotary embeddings, and the options the families add:
// per-head q/k RMSNorm (Qwen 3), a query scale other than 1/sqrt(head_dim) and soft-capped scores
// (Gemma 2), a sliding window (Mistral, Gemma 2, Phi-3), and a key/value cache for generation.
#pragma once

#include <ft/nn/attention_scores.h>
#include <ft/nn/decoder_config.h>
#include <ft/nn/kv_cache.h>
#include <ft/nn/linear.h>
#include <ft/nn/rms_norm.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <memory>

namespace ft::nn {

class AttentionImpl : public torch::nn::Module {
 public:
  // `layer` picks the layer's sliding window (DecoderConfig::layer_sliding_window).
  AttentionImpl(const DecoderConfig& cfg, std::int64_t layer, at::Tensor inverse_frequencies);
  // x: [b, s, dim]; positions: [b, s] or [s] int64; mask: [s, s] (shared by the batch) or
  // [b, s, s] bool, true = may attend; undefined: causal (the fused kernels then need no mask
  // tensor). A sliding window narrows whatever mask applies.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& positions, const at::Tensor& mask) const;
  Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, output_proj{nullptr};
  RMSNorm q_norm{nullptr}, k_norm{nullptr};  // Qwen 3; nullptr otherwise
  // Tensor parallelism (prepare_mha_for_tp): this rank computes only these heads.
  void use_local_heads(std::int64_t num_heads, std::int64_t num_kv_heads) {
    num_heads_ = num_heads;
    num_kv_heads_ = num_kv_heads;
  }
  // Set for generation (Model's KV cache role): forward attends over the cached positions.
  std::shared_ptr<KVCache> kv_cache;
  const AttentionScores& scores() const { return scores_; }

 private:
  std::int64_t num_heads_, num_kv_heads_, head_dim_;
  AttentionScores scores_;
  bool default_scale_ = true;  // 1/sqrt(head_dim): the fused kernels' own, passed as no scale at all
  at::Tensor inverse_frequencies_;
};
TORCH_MODULE(Attention);

// Attention of q [b, heads, s, hd] over k, v [b, kv_heads, s, hd] computed step by step (scores,
// soft cap, mask, float32 softmax, values), for what the fused kernels cannot do (soft-capping).
// `allowed`: bool, broadcastable to [b, heads, s, s]. Returns [b, heads, s, hd].
at::Tensor explicit_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& allowed,
                              const AttentionScores& scores);

// The causal mask [s, s] (true = may attend) narrowed to the last `window` positions when
// `window` > 0, or `mask` ([s, s] or [b, s, s]) narrowed the same way.
at::Tensor sliding_window_mask(const at::Tensor& mask, std::int64_t seq_len, std::int64_t window,
                               const at::TensorOptions& device);

}  // namespace ft::nn
