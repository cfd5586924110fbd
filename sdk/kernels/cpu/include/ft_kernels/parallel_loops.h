// Whether a kernel library's at::parallel_for loops really run on LibTorch's intra-op threads.
// at::parallel_for is a header template: a library compiled without OpenMP gets the copy that runs
// every loop on the calling thread, silently (cmake/FthostLibTorch.cmake, fthost::libtorch_openmp).
#pragma once

#include <ATen/Parallel.h>

#include <cstdint>
#include <mutex>
#include <set>
#include <thread>

namespace ft_kernels {

// How many distinct threads ran an at::parallel_for of many small items, compiled with the flags
// of the library that instantiates it: at::get_num_threads() when that library's loops run in
// parallel, 1 when they cannot. `Library` is a type of that library's own, so each library's copy
// is a symbol of its own and the linker cannot substitute another library's.
template <class Library>
int threads_running_parallel_loops() {
  std::mutex mutex;
  std::set<std::thread::id> threads;
  at::parallel_for(0, std::int64_t{1} << 16, 1, [&](std::int64_t, std::int64_t) {
    const std::lock_guard<std::mutex> lock(mutex);
    threads.insert(std::this_thread::get_id());
  });
  return static_cast<int>(threads.size());
}

// The fused CPU kernels' (ft_cpu_kernels) count.
int threads_in_parallel_loops();

}  // namespace ft_kernels
