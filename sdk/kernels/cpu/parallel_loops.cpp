#include <ft_kernels/parallel_loops.h>

#include <ATen/Parallel.h>

#include <cstdint>
#include <mutex>
#include <set>
#include <thread>

namespace ft_kernels {

int threads_in_parallel_loops() {
  std::mutex mutex;
  std::set<std::thread::id> threads;
  at::parallel_for(0, std::int64_t{1} << 16, 1, [&](std::int64_t, std::int64_t) {
    const std::lock_guard<std::mutex> lock(mutex);
    threads.insert(std::this_thread::get_id());
  });
  return static_cast<int>(threads.size());
}

}  // namespace ft_kernels
