// The loops behind the fused CPU operations (fused_ops.h), on raw contiguous row-major memory.
// Each is built twice, for baseline x86-64 and for AVX2 + FMA, and row_kernels() returns the
// set this CPU can run. Callers split the rows across threads; a kernel never reduces across
// rows, so its results do not depend on the split. `Bf16` is bfloat16's bit pattern; every
// kernel computes in float32 and rounds once per stored value.
#pragma once

#include <cstdint>

namespace ft_kernels {

using Bf16 = std::uint16_t;

template <class T>
struct RowKernelsFor {
  // y = round(x * rstd) * scale per row of `dim`; rstd[r] = 1 / sqrt(mean(x^2) + eps).
  void (*rms_norm_forward)(const T* x, const T* scale, T* y, float* rstd, std::int64_t rows, std::int64_t dim,
                           float eps);
  // gx for rows; the scale's gradient is accumulated into gscale_partial (float, [dim]).
  void (*rms_norm_backward)(const T* gy, const T* x, const T* scale, const float* rstd, T* gx, float* gscale_partial,
                            std::int64_t rows, std::int64_t dim);
  // y = silu(a) * b, elementwise over n.
  void (*swiglu_forward)(const T* a, const T* b, T* y, std::int64_t n);
  void (*swiglu_backward)(const T* gy, const T* a, const T* b, T* ga, T* gb, std::int64_t n);
  // Rotary embedding of `heads` vectors of width 2*half per row (halves rotated, as Hugging
  // Face's rotate_half): y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin, with one [half] cos/sin row
  // per input row. `inverse` applies the transposed rotation (the backward).
  void (*rotary)(const T* x, const float* cos, const float* sin, T* y, std::int64_t rows, std::int64_t heads,
                 std::int64_t half, bool inverse);
  // Softmax of scale * x over each row of `cols`, where `allowed` (one byte per column, or
  // nullptr with `causal_limit`: columns <= causal_limit[r]) says which columns take part;
  // the others get probability 0 and cost nothing. A row with no allowed column is NaN, as
  // torch's softmax over all -inf is.
  void (*masked_softmax_forward)(const T* x, const std::uint8_t* allowed, const std::int64_t* causal_limit, T* p,
                                 std::int64_t rows, std::int64_t cols, float scale);
  // gx = scale * p * (gp - sum(gp * p)) per row.
  void (*masked_softmax_backward)(const T* gp, const T* p, T* gx, std::int64_t rows, std::int64_t cols, float scale);
  // Per row: logsumexp of the logits (float, [rows]) and the loss lse - x[target] (0 where
  // target == ignore_index).
  void (*cross_entropy_forward)(const T* logits, const std::int64_t* targets, float* lse, float* loss,
                                std::int64_t rows, std::int64_t cols, std::int64_t ignore_index);
  // g = gloss * (softmax - onehot(target)) per row; rows with ignored targets get 0.
  void (*cross_entropy_backward)(const T* logits, const std::int64_t* targets, const float* lse, T* g,
                                 std::int64_t rows, std::int64_t cols, std::int64_t ignore_index, float gloss);
};

struct RowKernels {
  const char* name;  // "avx2" or "baseline"
  RowKernelsFor<float> f32;
  RowKernelsFor<Bf16> bf16;
};

// The fastest set this CPU runs (FT_CPU_KERNELS=baseline forces the portable one).
const RowKernels& row_kernels();

}  // namespace ft_kernels
