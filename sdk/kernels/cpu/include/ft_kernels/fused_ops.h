// Fused CPU operations for the Llama-family model and the cross-entropy losses: one pass over
// memory forward and one backward, each a custom autograd function with a hand-written
// gradient. Float32 and bfloat16 CPU tensors take the fused path; CUDA tensors take LibTorch's
// fused operators or fthost's CUDA kernels where the function notes it, and the composite
// reference (the same function in ATen ops) otherwise, as does float64.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace ft_kernels {

// x * rsqrt(mean(x^2, -1) + eps) * scale, the normalisation computed in float32. CUDA tensors
// take LibTorch's fused RMSNorm kernel.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& scale, double eps);

// silu(gate) * up. CUDA tensors take the CUDA kernel (ft_cuda_kernels/swiglu.h).
at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up);

// The cos/sin of every (position, frequency) a forward pass rotates by: [b or 1, s, half]
// float32, computed once and shared by every layer.
struct RotaryTables {
  at::Tensor cos, sin;
};
RotaryTables rotary_tables(const at::Tensor& positions, const at::Tensor& inverse_frequencies);
// Rotates x [b, s, heads, 2 * half] by halves (Hugging Face's rotate_half convention).
at::Tensor rotary(const at::Tensor& x, const RotaryTables& tables);

// softmax(scale * scores) over the last axis, where `allowed` ([s_q, s_k] or [b, s_q, s_k] bool,
// true = may attend) masks columns. `scores` is [b, heads..., s_q, s_k] with any number of head
// axes; the result has scores' dtype and shape. A mask whose every row is a prefix (causal)
// makes the masked columns cost nothing.
at::Tensor masked_softmax(const at::Tensor& scores, const at::Tensor& allowed, double scale);

// Sum over rows of -log softmax(logits)[target], rows with target == ignore_index skipped:
// logits [n, vocab], targets [n] int64. Float32 scalar. The log-probabilities never exist.
at::Tensor cross_entropy_sum(const at::Tensor& logits, const at::Tensor& targets, std::int64_t ignore_index);

// The same loss over logits [b, s, vocab] and targets [b, s], added up as torchtune's
// CEWithChunkedOutputLoss adds it: the `sequence_chunks` chunks of the sequence axis
// (torch.chunk's split) each summed on its own into a float32 scalar, then those in order. One
// pass over the whole logits, with no per-chunk copies, and the same float32 result as summing
// cross_entropy_sum over the chunks.
at::Tensor chunked_cross_entropy_sum(const at::Tensor& logits, const at::Tensor& targets, std::int64_t ignore_index,
                                     std::int64_t sequence_chunks);

}  // namespace ft_kernels
