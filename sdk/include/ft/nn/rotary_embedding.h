// Rotary position embedding in the Hugging Face "rotate half" layout: dimension i of a head is
// paired with dimension i + head_dim/2. torchtune pairs interleaved dimensions and permutes the
// q/k projection rows on checkpoint conversion instead; the two give identical attention
// scores, and keeping HF's layout means checkpoints load without any permutation.
#pragma once

#include <ft/nn/decoder_config.h>

#include <ATen/core/Tensor.h>

#include <optional>

namespace ft::nn {

// Inverse frequencies [head_dim / 2] in float32, with Llama 3.1 scaling applied when given.
at::Tensor rope_inverse_frequencies(std::int64_t head_dim, double base,
                                    const std::optional<Llama3RopeScaling>& scaling);

// x: [b, s, heads, head_dim]; positions: [b, s] or [s] int64. Computed in float32 and returned
// in x's dtype, as torchtune does for bf16 training.
at::Tensor apply_rotary_embedding(const at::Tensor& x, const at::Tensor& positions,
                                  const at::Tensor& inverse_frequencies);

}  // namespace ft::nn
