#include "train/thread_settings.h"

#include <ft/log.h>

#include <ATen/Parallel.h>

#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace fthost {

namespace {

int cores_available() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace

int threads_per_rank(int local_world_size) { return std::max(1, cores_available() / std::max(1, local_world_size)); }

ThreadPlan apply_thread_settings(int num_threads) {
  ThreadPlan plan;
  const int threads = num_threads > 0 ? num_threads : cores_available();
  at::set_num_threads(threads);
  plan.intra_op = at::get_num_threads();
  // Looked up at run time: a LibTorch linked against OpenBLAS has a pool that
  // at::set_num_threads does not reach; PyTorch's wheels use MKL, which it does reach.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    set(threads);
    plan.openblas = threads;
    plan.openblas_found = true;
  }
  ft::log::info("threads: {} intra-op, {} (OMP_WAIT_POLICY={})", plan.intra_op,
                plan.openblas_found ? std::to_string(plan.openblas) + " OpenBLAS"
                                    : std::string("LibTorch's BLAS on the same threads"),
                std::getenv("OMP_WAIT_POLICY") ? std::getenv("OMP_WAIT_POLICY") : "default");
  return plan;
}

}  // namespace fthost
