// Rotary position embedding in the Hugging Face "rotate half" layout: dimension i of a head is
// paired with dimension i + head_dim/2. torchtune pairs interleaved dimensions and permutes the
// q/k projection rows on checkpoint conversion instead; the two give identical attention
// scores, and keeping HF's layout means checkpoints load without any permutation.
#pragma once

#include <ft/nn/positional_embedding.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>

namespace ft::nn {

// Llama 3.1's frequency-dependent RoPE scaling (HF rope_type "llama3").
struct Llama3RopeScaling {
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  std::int64_t original_max_position_embeddings = 8192;
};

// Inverse frequencies [head_dim / 2] in float32, with Llama 3.1 scaling applied when given.
at::Tensor rope_inverse_frequencies(std::int64_t head_dim, double base,
                                    const std::optional<Llama3RopeScaling>& scaling);

// x: [b, s, heads, head_dim]; positions: [b, s] or [s] int64. Computed in float32 and returned
// in x's dtype, as torchtune does for bf16 training.
at::Tensor apply_rotary_embedding(const at::Tensor& x, const at::Tensor& positions,
                                  const at::Tensor& inverse_frequencies);

// One instance is shared by every layer of a decoder: the cos/sin tables of a forward pass are
// then computed once, not once per layer.
class RotaryEmbedding final : public PositionalEmbedding {
 public:
  RotaryEmbedding(std::int64_t head_dim, double base, const std::optional<Llama3RopeScaling>& scaling = std::nullopt)
      : inverse_frequencies_(rope_inverse_frequencies(head_dim, base, scaling)) {}
  at::Tensor apply(const at::Tensor& x, const at::Tensor& positions) const override {
    return apply_rotary_embedding(x, positions, inverse_frequencies_);
  }

 private:
  at::Tensor inverse_frequencies_;
};

inline std::shared_ptr<const PositionalEmbedding> rotary_embedding(
    std::int64_t head_dim, double base, const std::optional<Llama3RopeScaling>& scaling = std::nullopt) {
  return std::make_shared<RotaryEmbedding>(head_dim, base, scaling);
}

}  // namespace ft::nn
