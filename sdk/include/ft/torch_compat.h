// Every LibTorch call whose spelling differs between the LibTorch versions fthost builds
// against (the pinned PyTorch wheel, docs/building.md, and a GPU machine's own PyTorch 2.11 or
// newer), or that reaches below the public tensor API, lives here, so the rest of the code (host
// and plugins) has no version or CUDA conditionals.
#pragma once

#include <ATen/Functions.h>
#include <ATen/core/Tensor.h>
#include <c10/core/StorageImpl.h>
#include <torch/csrc/autograd/function.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#if FT_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace ft::compat {

// Autograd nodes are owned through std::shared_ptr (freed by torch's iterative deleter, so a long
// graph does not recurse) up to LibTorch 2.12, and through c10::intrusive_ptr from 2.13.
#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 13
using AutogradNodePtr = std::shared_ptr<torch::autograd::Node>;
template <class NodeT, class... Args>
std::shared_ptr<NodeT> make_autograd_node(Args&&... args) {
  return std::shared_ptr<NodeT>(new NodeT(std::forward<Args>(args)...), torch::autograd::deleteNode);
}
#else
using AutogradNodePtr = c10::intrusive_ptr<torch::autograd::Node>;
template <class NodeT, class... Args>
c10::intrusive_ptr<NodeT> make_autograd_node(Args&&... args) {
  return c10::make_intrusive<NodeT>(std::forward<Args>(args)...);
}
#endif

inline bool cuda_built() {
#if FT_WITH_CUDA
  return true;
#else
  return false;
#endif
}

inline std::int64_t cuda_device_count() {
  return cuda_built() ? static_cast<std::int64_t>(torch::cuda::device_count()) : 0;
}

inline void set_current_cuda_device(int index) {
#if FT_WITH_CUDA
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(index));
#else
  (void)index;
#endif
}

// The CUDA device's name as its driver reports it ("NVIDIA H100 80GB HBM3"); empty without CUDA.
inline std::string cuda_device_name(int index) {
#if FT_WITH_CUDA
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, index) != cudaSuccess) return {};
  return properties.name;
#else
  (void)index;
  return {};
#endif
}

// The CUDA device's compute capability major version (9 for Hopper); 0 without CUDA.
inline int cuda_compute_capability_major(int index) {
#if FT_WITH_CUDA
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, index) != cudaSuccess) return 0;
  return properties.major;
#else
  (void)index;
  return 0;
#endif
}

// LibTorch's grouped GEMM (a private operator, present from 2.8): a [n, k] times b [groups, k, m]
// with `offsets` the int32 end row of each group in a.
inline at::Tensor grouped_mm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& offsets) {
  return at::_grouped_mm(a, b, offsets);
}

// Fused attention that also returns each query's log-sum-exp of its scores ([b, heads, s],
// float32), and its backward given any output and log-sum-exp (those of the whole sequence under
// ring attention). Private operators: the CPU flash kernel and CUDA's memory-efficient one, which
// both take an additive mask. Heads: q's may be a multiple of k's (grouped-query) on the CPU;
// on CUDA the caller repeats k and v.
struct AttentionWithLse {
  at::Tensor out, lse;
  at::Tensor philox_seed, philox_offset;  // CUDA's backward wants them back (no dropout here)
};

// CUDA's memory-efficient kernel reads the bias with rows aligned to 16 elements (SDPA pads it
// the same way) and takes it broadcast to every batch row and head, which expand() does without
// a copy.
inline std::optional<at::Tensor> efficient_attention_bias(const std::optional<at::Tensor>& mask, const at::Tensor& q,
                                                          const at::Tensor& k) {
  if (!mask) return std::nullopt;
  at::Tensor bias = *mask;
  const std::int64_t keys = bias.size(-1);
  if (keys % 16 != 0) {
    std::vector<std::int64_t> sizes = bias.sizes().vec();
    sizes.back() = (keys + 15) / 16 * 16;
    at::Tensor aligned = at::zeros(sizes, bias.options());
    aligned.narrow(-1, 0, keys).copy_(bias);
    bias = aligned.narrow(-1, 0, keys);
  }
  return bias.expand({q.size(0), q.size(1), q.size(2), k.size(2)});
}

inline AttentionWithLse attention_with_lse(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                           const std::optional<at::Tensor>& additive_mask, bool is_causal,
                                           double scale) {
  if (q.is_cpu()) {
    auto [out, lse] = at::_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, is_causal, additive_mask, scale);
    return {out, lse, {}, {}};
  }
  auto [out, lse, seed, offset] = at::_scaled_dot_product_efficient_attention(
      q, k, v, efficient_attention_bias(additive_mask, q, k), /*compute_log_sumexp=*/true, 0.0, is_causal, scale);
  return {out, lse, seed, offset};
}

struct AttentionGradients {
  at::Tensor q, k, v;
};

inline AttentionGradients attention_with_lse_backward(const at::Tensor& grad_out, const at::Tensor& q,
                                                      const at::Tensor& k, const at::Tensor& v,
                                                      const std::optional<at::Tensor>& additive_mask, bool is_causal,
                                                      double scale, const AttentionWithLse& forward) {
  if (q.is_cpu()) {
    auto [dq, dk, dv] = at::_scaled_dot_product_flash_attention_for_cpu_backward(
        grad_out, q, k, v, forward.out, forward.lse, 0.0, is_causal, additive_mask, scale);
    return {dq, dk, dv};
  }
  // Without dropout the random state is never read; the operator still takes the tensors.
  const auto defined_or_zero = [](const at::Tensor& t) { return t.defined() ? t : at::zeros({}, at::kLong); };
  auto [dq, dk, dv, dbias] = at::_scaled_dot_product_efficient_attention_backward(
      grad_out, q, k, v, efficient_attention_bias(additive_mask, q, k).value_or(at::Tensor()), forward.out, forward.lse,
      defined_or_zero(forward.philox_seed), defined_or_zero(forward.philox_offset), 0.0, {true, true, true, false},
      is_causal, scale);
  return {dq, dk, dv};
}

struct CudaMemoryPeaks {
  double active_bytes = 0, allocated_bytes = 0, reserved_bytes = 0;
};

inline CudaMemoryPeaks cuda_memory_peaks(int device_index) {
  CudaMemoryPeaks peaks;
#if FT_WITH_CUDA
  constexpr auto aggregate = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device_index));
  peaks.active_bytes = static_cast<double>(stats.active_bytes[aggregate].peak);
  peaks.allocated_bytes = static_cast<double>(stats.allocated_bytes[aggregate].peak);
  peaks.reserved_bytes = static_cast<double>(stats.reserved_bytes[aggregate].peak);
#else
  (void)device_index;
#endif
  return peaks;
}

// Sharded data parallelism frees a gathered parameter's memory while autograd still holds the
// tensor, and refills the same storage before backward (as PyTorch's FSDP does by resizing the
// storage to 0 and back). The tensor objects, their views and autograd's saved references stay
// valid throughout; only the bytes come and go.
inline void free_storage(const at::Tensor& tensor) { tensor.storage().unsafeGetStorageImpl()->reset(); }

inline void allocate_storage(const at::Tensor& tensor, std::size_t nbytes) {
  c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  storage->set_data_ptr_noswap(storage->allocator()->allocate(nbytes));
  storage->set_nbytes(nbytes);
}

// A CPU copy of an accelerator tensor for CPU offloading, in page-locked memory so the copies
// back to the device can overlap (pinned memory needs an accelerator build: call it only there).
inline at::Tensor to_cpu_for_offload(const at::Tensor& tensor) {
  at::Tensor host = at::empty(tensor.sizes(), tensor.options().device(at::kCPU).pinned_memory(true));
  host.copy_(tensor);
  return host;
}

}  // namespace ft::compat
