// silu(gate) * up on CUDA tensors in one pass forward and one backward, with autograd: the
// product is computed in float32 and rounded once, and backward keeps only gate and up (ATen's
// composite also keeps silu(gate), a third tensor of the MLP's hidden size per layer).
#pragma once

#include <ATen/core/Tensor.h>

namespace ft_cuda_kernels {

// False in builds without CUDA (FTHOST_WITH_CUDA=OFF), where swiglu() must not be called.
bool available();

// gate and up: CUDA tensors of one shape and dtype (float32, bfloat16 or float16).
at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up);

}  // namespace ft_cuda_kernels
