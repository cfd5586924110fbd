// The CUDA forms of bitsandbytes_adam_update.cpp's loops. Every multiply, add, divide and square
// root is an explicitly rounded intrinsic (__fmul_rn, ...): nvcc would otherwise fuse a multiply
// and an add into one rounding, and the CPU kernel (compiled without FMA contraction) rounds twice.
#include "bitsandbytes_adam_launch.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace ftoptim::cuda_launch {
namespace {

constexpr int kBlock = 256;  // values per absmax, and threads per CUDA block

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16(x);  // round to nearest even, as c10::BFloat16
}

// The index of the code nearest to x, the lower one on a tie: CodeLookup::nearest's answer
// (dynamic_quantization.h) by a branch-free binary search over the sorted map.
__device__ __forceinline__ std::uint8_t nearest_code(const float* map, float x) {
  int i = 0;
  for (int step = 128; step > 0; step >>= 1)
    if (map[i + step] <= x) i += step;
  if (i == 255) return 255;
  return static_cast<std::uint8_t>(i + (__fsub_rn(map[i + 1], x) < __fsub_rn(x, map[i]) ? 1 : 0));
}

template <class P, class G>
__global__ void adam_8bit_kernel(P* __restrict__ param, const G* __restrict__ grad, std::uint8_t* __restrict__ state1,
                                 std::uint8_t* __restrict__ state2, float* __restrict__ absmax1,
                                 float* __restrict__ absmax2, std::int64_t n, BitsAndBytesStepConstants c,
                                 DynamicMaps maps) {
  __shared__ float signed_map[kBlock], unsigned_map[kBlock];
  __shared__ float max1[kBlock], max2[kBlock];
  const int t = threadIdx.x;
  signed_map[t] = maps.signed_codes[t];
  unsigned_map[t] = maps.unsigned_codes[t];
  __syncthreads();
  const std::int64_t block = blockIdx.x;
  const std::int64_t i = block * kBlock + t;
  const bool live = i < n;
  float m = 0.0f, v = 0.0f;
  if (live) {
    const float g = __fmul_rn(to_float(grad[i]), c.scale);
    m = __fadd_rn(__fmul_rn(__fmul_rn(signed_map[state1[i]], absmax1[block]), c.beta1),
                  __fmul_rn(c.one_minus_beta1, g));
    v = __fadd_rn(__fmul_rn(__fmul_rn(unsigned_map[state2[i]], absmax2[block]), c.beta2),
                  __fmul_rn(__fmul_rn(c.one_minus_beta2, g), g));
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(v), c.correction2), c.eps);
    float p = to_float(param[i]);
    if (c.decays) p = __fmul_rn(p, c.decay);
    param[i] = from_float<P>(__fadd_rn(p, __fmul_rn(c.step_size, __fdiv_rn(m, denom))));
  }
  // The block's largest magnitudes; fmaxf skips a NaN as the CPU's std::max(running, nan) does.
  max1[t] = live ? fabsf(m) : 0.0f;
  max2[t] = live ? fabsf(v) : 0.0f;
  __syncthreads();  // every thread has read absmax1/absmax2[block] before they are replaced below
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (t < s) {
      max1[t] = fmaxf(max1[t], max1[t + s]);
      max2[t] = fmaxf(max2[t], max2[t + s]);
    }
    __syncthreads();
  }
  const float block_max1 = max1[0], block_max2 = max2[0];
  if (t == 0) {
    absmax1[block] = block_max1;
    absmax2[block] = block_max2;
  }
  if (live) {
    const float inverse1 = block_max1 > 0.0f ? __fdiv_rn(1.0f, block_max1) : 0.0f;
    const float inverse2 = block_max2 > 0.0f ? __fdiv_rn(1.0f, block_max2) : 0.0f;
    state1[i] = nearest_code(signed_map, __fmul_rn(m, inverse1));
    state2[i] = nearest_code(unsigned_map, __fmul_rn(v, inverse2));
  }
}

template <class P, class G>
__global__ void adam_32bit_kernel(P* __restrict__ param, const G* __restrict__ grad, float* __restrict__ state1,
                                  float* __restrict__ state2, std::int64_t n, BitsAndBytesStepConstants c) {
  // bitsandbytes' 32-bit form: step_size -lr * c2 / c1 on m / (sqrt(v) + eps * c2).
  const float step_size = __fmul_rn(c.step_size, c.correction2), eps = __fmul_rn(c.eps, c.correction2);
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float g = __fmul_rn(to_float(grad[i]), c.scale);
    const float m = __fadd_rn(__fmul_rn(state1[i], c.beta1), __fmul_rn(c.one_minus_beta1, g));
    const float v = __fadd_rn(__fmul_rn(state2[i], c.beta2), __fmul_rn(__fmul_rn(c.one_minus_beta2, g), g));
    state1[i] = m;
    state2[i] = v;
    float p = to_float(param[i]);
    if (c.decays) p = __fmul_rn(p, c.decay);
    param[i] = from_float<P>(__fadd_rn(p, __fmul_rn(__fdiv_rn(m, __fadd_rn(__fsqrt_rn(v), eps)), step_size)));
  }
}

// Calls f(P*, const G*) with the element types.
template <class F>
void with_types(void* param, ElementType param_type, const void* grad, ElementType grad_type, F f) {
  auto with_grad = [&](auto* p) {
    if (grad_type == ElementType::float32) return f(p, static_cast<const float*>(grad));
    return f(p, static_cast<const __nv_bfloat16*>(grad));
  };
  if (param_type == ElementType::float32) return with_grad(static_cast<float*>(param));
  return with_grad(static_cast<__nv_bfloat16*>(param));
}

}  // namespace

void adam_8bit_blockwise(void* param, ElementType param_type, const void* grad, ElementType grad_type,
                         std::uint8_t* state1, std::uint8_t* state2, float* absmax1, float* absmax2, std::int64_t n,
                         const BitsAndBytesStepConstants& c, const DynamicMaps& maps, void* stream) {
  if (n == 0) return;
  const auto blocks = static_cast<unsigned>((n + kBlock - 1) / kBlock);
  with_types(param, param_type, grad, grad_type, [&](auto* p, const auto* g) {
    adam_8bit_kernel<<<blocks, kBlock, 0, static_cast<cudaStream_t>(stream)>>>(p, g, state1, state2, absmax1, absmax2,
                                                                               n, c, maps);
  });
}

void adam_32bit(void* param, ElementType param_type, const void* grad, ElementType grad_type, float* state1,
                float* state2, std::int64_t n, const BitsAndBytesStepConstants& c, void* stream) {
  if (n == 0) return;
  constexpr int kThreads = 256;
  const std::int64_t wanted = (n + kThreads - 1) / kThreads;
  const auto blocks = static_cast<unsigned>(wanted < 65536 ? wanted : 65536);
  with_types(param, param_type, grad, grad_type, [&](auto* p, const auto* g) {
    adam_32bit_kernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(p, g, state1, state2, n, c);
  });
}

}  // namespace ftoptim::cuda_launch
