#include "swiglu_launch.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

namespace ft_cuda_kernels::launch {
namespace {

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16(x);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half(x);
}

template <class T>
__global__ void swiglu_forward_kernel(const T* __restrict__ gate, const T* __restrict__ up, T* __restrict__ out,
                                      std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float g = to_float(gate[i]);
    const float silu = g / (1.0f + expf(-g));
    out[i] = from_float<T>(silu * to_float(up[i]));
  }
}

// d/dg silu(g) = sigmoid(g) * (1 + g * (1 - sigmoid(g))).
template <class T>
__global__ void swiglu_backward_kernel(const T* __restrict__ grad_out, const T* __restrict__ gate,
                                       const T* __restrict__ up, T* __restrict__ grad_gate, T* __restrict__ grad_up,
                                       std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float g = to_float(gate[i]), u = to_float(up[i]), gy = to_float(grad_out[i]);
    const float sigmoid = 1.0f / (1.0f + expf(-g));
    const float silu = g * sigmoid;
    grad_gate[i] = from_float<T>(gy * u * sigmoid * (1.0f + g * (1.0f - sigmoid)));
    grad_up[i] = from_float<T>(gy * silu);
  }
}

constexpr int kThreads = 256;

unsigned blocks_for(std::int64_t n) {
  // Enough blocks to fill any current GPU several times over; the loops stride over the rest.
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>((n + kThreads - 1) / kThreads, 65536)));
}

template <class Fn>
void with_type(ElementType type, Fn&& fn) {
  switch (type) {
    case ElementType::float32: return fn(float{});
    case ElementType::bfloat16: return fn(__nv_bfloat16{});
    case ElementType::float16: return fn(__half{});
  }
}

}  // namespace

void swiglu_forward(const void* gate, const void* up, void* out, std::int64_t n, ElementType type,
                    cudaStream_t stream) {
  if (n == 0) return;
  with_type(type, [&](auto tag) {
    using T = decltype(tag);
    swiglu_forward_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(gate), static_cast<const T*>(up), static_cast<T*>(out), n);
  });
}

void swiglu_backward(const void* grad_out, const void* gate, const void* up, void* grad_gate, void* grad_up,
                     std::int64_t n, ElementType type, cudaStream_t stream) {
  if (n == 0) return;
  with_type(type, [&](auto tag) {
    using T = decltype(tag);
    swiglu_backward_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(grad_out), static_cast<const T*>(gate), static_cast<const T*>(up),
        static_cast<T*>(grad_gate), static_cast<T*>(grad_up), n);
  });
}

}  // namespace ft_cuda_kernels::launch
