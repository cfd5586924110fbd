// The raw launches behind ft_cuda_kernels::swiglu, kept free of LibTorch so nvcc compiles only
// the kernels (swiglu_kernels.cu) and the host compiler the autograd function (swiglu.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ft_cuda_kernels::launch {

enum class ElementType { float32, bfloat16, float16 };

void swiglu_forward(const void* gate, const void* up, void* out, std::int64_t n, ElementType type, cudaStream_t stream);
void swiglu_backward(const void* grad_out, const void* gate, const void* up, void* grad_gate, void* grad_up,
                     std::int64_t n, ElementType type, cudaStream_t stream);

}  // namespace ft_cuda_kernels::launch
