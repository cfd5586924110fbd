// Every LibTorch call whose spelling differs between the LibTorch versions fthost builds
// against (Debian's 1.13 CPU build, 2.x CUDA builds) lives here, so the rest of the code has
// no version or CUDA conditionals.
#pragma once

#include <torch/cuda.h>
#include <torch/version.h>

#include <cstdint>

#if defined(FTHOST_WITH_CUDA)
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace fthost::compat {

inline bool cuda_built() {
#if defined(FTHOST_WITH_CUDA)
  return true;
#else
  return false;
#endif
}

inline std::int64_t cuda_device_count() { return cuda_built() ? static_cast<std::int64_t>(torch::cuda::device_count()) : 0; }

struct CudaMemoryPeaks {
  double active_bytes = 0, allocated_bytes = 0, reserved_bytes = 0;
};

inline CudaMemoryPeaks cuda_memory_peaks(int device_index) {
  CudaMemoryPeaks peaks;
#if defined(FTHOST_WITH_CUDA)
  // The stat arrays are indexed by StatType; 2.x made the aggregate index a named constant.
#if TORCH_VERSION_MAJOR >= 2
  constexpr auto aggregate = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device_index));
#else
  constexpr auto aggregate = static_cast<std::size_t>(c10::cuda::CUDACachingAllocator::StatType::AGGREGATE);
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device_index);
#endif
  peaks.active_bytes = static_cast<double>(stats.active_bytes[aggregate].peak);
  peaks.allocated_bytes = static_cast<double>(stats.allocated_bytes[aggregate].peak);
  peaks.reserved_bytes = static_cast<double>(stats.reserved_bytes[aggregate].peak);
#else
  (void)device_index;
#endif
  return peaks;
}

}  // namespace fthost::compat
