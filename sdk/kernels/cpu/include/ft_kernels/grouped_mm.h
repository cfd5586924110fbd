// The experts' matrix products of a mixture-of-experts layer as one operation: the rows of `x`
// are sorted by expert, and each expert's contiguous block of rows is multiplied by that expert's
// weight. No per-token work and no per-expert autograd nodes.
#pragma once

#include <ATen/core/Tensor.h>

namespace ft_kernels {

// y[rows of group g] = x[rows of group g] @ w[g]^T, for x [n, in] (rows sorted by group),
// w [groups, out, in] and group_sizes [groups] int64 on x's device (summing to n). Returns
// [n, out], differentiable in x and w. CUDA bfloat16 on a device with grouped GEMMs (compute
// capability 9.0+) takes LibTorch's _grouped_mm; everything else one GEMM per group over its
// rows, into one output, with a hand-written backward doing the same per group. With
// FT_CPU_KERNELS=aten: one autograd matmul per group, concatenated (the reference).
at::Tensor grouped_mm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& group_sizes);

// Whether grouped_mm takes LibTorch's grouped GEMM for these operands (said once in the log by
// the caller; the result is the same either way up to summation order).
bool grouped_mm_uses_grouped_gemm(const at::Tensor& x, const at::Tensor& w);

}  // namespace ft_kernels
