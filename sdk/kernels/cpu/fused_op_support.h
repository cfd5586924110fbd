// What the fused operations share: which tensors take the fused path, typed pointers for the
// row kernels, and the split of rows across intra-op threads.
#pragma once

#include <ft_kernels/kernel_choice.h>
#include <ft_kernels/row_kernels.h>

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <c10/util/BFloat16.h>

#include <algorithm>
#include <cstdint>
#include <functional>

namespace ft_kernels {

// CPU float32 / bfloat16 tensors, all of one dtype, unless FT_CPU_KERNELS=aten.
inline bool takes_fused_path(const at::Tensor& a, const at::Tensor& b = at::Tensor()) {
  if (!fused_kernels_enabled()) return false;
  const bool supported = a.device().is_cpu() && (a.scalar_type() == at::kFloat || a.scalar_type() == at::kBFloat16);
  return supported && (!b.defined() || (b.device().is_cpu() && b.scalar_type() == a.scalar_type()));
}

template <class T>
T* typed(const at::Tensor& t);
template <>
inline float* typed<float>(const at::Tensor& t) {
  return t.data_ptr<float>();
}
template <>
inline Bf16* typed<Bf16>(const at::Tensor& t) {
  return reinterpret_cast<Bf16*>(t.data_ptr<at::BFloat16>());
}

// Calls fn(kernels, T{}) with the row kernels for the tensor's dtype (float32 or bfloat16).
template <class Fn>
void with_kernels(const at::Tensor& t, Fn&& fn) {
  const RowKernels& k = row_kernels();
  if (t.scalar_type() == at::kBFloat16)
    fn(k.bf16, Bf16{});
  else
    fn(k.f32, float{});
}

// Rows per task: about 32K elements each, so short rows are batched and long ones split.
inline void parallel_rows(std::int64_t rows, std::int64_t cols,
                          const std::function<void(std::int64_t, std::int64_t)>& body) {
  const std::int64_t grain = std::max<std::int64_t>(1, (std::int64_t{1} << 15) / std::max<std::int64_t>(cols, 1));
  at::parallel_for(0, rows, grain, body);
}

}  // namespace ft_kernels
