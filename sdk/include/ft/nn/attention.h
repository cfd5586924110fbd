// Grouped-query self-attention, composed by the family's builder: the sizes and score options
// (AttentionOptions), the positional embedding, and the q/k norm modules are handed in. A key/
// value cache is attached for generation.
#pragma once

#include <ft/nn/attention_mask.h>
#include <ft/nn/attention_scores.h>
#include <ft/nn/context_parallel.h>
#include <ft/nn/kv_cache.h>
#include <ft/nn/linear.h>
#include <ft/nn/norm.h>
#include <ft/nn/positional_embedding.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace ft::nn {

// Llama 4's attention temperature on its layers without positions: queries at position p scaled
// by log(1 + floor((p + 1) / floor_scale)) * attn_scale + 1, so attention sharpens with distance.
struct QueryTemperature {
  double floor_scale = 0;
  double attn_scale = 0;
};

struct AttentionOptions {
  std::int64_t embed_dim = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;  // grouped-query attention: num_heads is a multiple of it
  std::int64_t head_dim = 0;
  bool projection_bias = false;       // biases on q, k and v (not the output projection)
  std::optional<double> query_scale;  // multiplies q.k; nullopt: 1/sqrt(head_dim)
  double softcap = 0;                 // scores -> softcap * tanh(scores / softcap); 0: none
  AttentionMask mask;
  // The q/k norms after the positional embedding instead of before it (Llama 4's L2 norm).
  bool norm_after_positions = false;
  std::optional<QueryTemperature> query_temperature;  // nullopt: none

  // Empty when consistent, else what is wrong.
  std::string problem() const;
};

// What the builder hands attention besides its options. Norms are applied to each head's
// queries and keys before the positional embedding; nullptr: none.
struct AttentionBlocks {
  std::shared_ptr<const PositionalEmbedding> positions;  // nullptr: no positions in attention
  Norm q_norm;
  Norm k_norm;
};

class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(const AttentionOptions& options, AttentionBlocks blocks);
  // x: [b, s, dim]; positions: [b, s] or [s] int64; mask: [s, s] (shared by the batch) or
  // [b, s, s] bool, true = may attend; undefined: causal (the fused kernels then need no mask
  // tensor). The options' mask kind narrows whatever mask applies. `documents` (packed rows, with
  // no mask): each row's documents attend within themselves.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& positions, const at::Tensor& mask,
                     const DocumentLengths& documents = {}) const;
  Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, output_proj{nullptr};
  Norm q_norm, k_norm;  // nullptr when the builder gave none
  // Tensor parallelism (prepare_mha_for_tp): this rank computes only these heads.
  void use_local_heads(std::int64_t num_heads, std::int64_t num_kv_heads) {
    num_heads_ = num_heads;
    num_kv_heads_ = num_kv_heads;
  }
  // Set for generation (Model's KV cache role): forward attends over the cached positions.
  std::shared_ptr<KVCache> kv_cache;
  // Set under context parallelism (ft/model_context_parallelism.h): x holds this rank's share of
  // each sequence (load_balanced_indices), positions their global indices, documents the global
  // rows' lengths; attention runs round the group's ring.
  std::shared_ptr<const ContextParallel> context_parallel;
  const AttentionScores& scores() const { return scores_; }
  // The sizes it was built with (whole, not this rank's share under tensor parallelism).
  const AttentionOptions& options() const { return options_; }

 private:
  // q [b, heads, s, hd], k and v [b, kv_heads, s, hd] -> [b, heads, s, hd].
  at::Tensor attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) const;
  AttentionOptions options_;
  std::int64_t num_heads_, num_kv_heads_, head_dim_;
  AttentionScores scores_;
  std::shared_ptr<const PositionalEmbedding> positions_;
};
TORCH_MODULE(Attention);

// Attention of q [b, heads, s, hd] over k, v [b, kv_heads, s, hd] computed step by step (scores,
// soft cap, mask, float32 softmax, values), for what the fused kernels cannot do (soft-capping).
// `allowed`: bool, broadcastable to [b, heads, s, s]. Returns [b, heads, s, hd].
at::Tensor explicit_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& allowed,
                              const AttentionScores& scores);

// The mask of `kind` over `seq_len` positions [s, s] (true = may attend), or `mask` ([s, s] or
// [b, s, s]) narrowed by it.
at::Tensor narrowed_mask(const at::Tensor& mask, std::int64_t seq_len, const AttentionMask& kind,
                         const at::TensorOptions& device);

}  // namespace ft::nn
