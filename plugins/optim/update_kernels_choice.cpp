// Which copy of the update loops this process runs (update_kernels.h), by the same FT_CPU_KERNELS
// and CPU checks as every other fused CPU kernel, and whether its loops run in parallel.
#include "update_kernels.h"

#include <ft_kernels/kernel_choice.h>

#include <ATen/Parallel.h>

#include <cstdint>
#include <mutex>
#include <set>
#include <thread>

namespace ftoptim {

bool update_kernels_use_avx2() {
  static const bool avx2 = !ft_kernels::portable_kernels_forced() && ft_kernels::cpu_has_avx2();
  return avx2;
}

int threads_in_update_loops() {
  std::mutex mutex;
  std::set<std::thread::id> threads;
  at::parallel_for(0, std::int64_t{1} << 16, 1, [&](std::int64_t, std::int64_t) {
    const std::lock_guard<std::mutex> lock(mutex);
    threads.insert(std::this_thread::get_id());
  });
  return static_cast<int>(threads.size());
}

}  // namespace ftoptim
