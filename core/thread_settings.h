// The three thread pools a LibTorch CPU run has, set deliberately (their defaults oversubscribe
// a small machine and cost up to 2x): LibTorch's intra-op pool, OpenBLAS's own pool (which
// torch::set_num_threads does not reach), and the OpenMP wait policy, which the OpenMP runtime
// reads once when it loads, before main().
#pragma once

namespace fthost {

// Call first thing in main(). When OMP_WAIT_POLICY is unset, sets it to PASSIVE (idle OpenMP
// workers sleep instead of spinning on cores the next matmul needs) and re-executes the
// program so the runtime sees it. Does nothing when the variable is already set.
void ensure_passive_openmp_wait_policy(char** argv);

struct ThreadPlan {
  int intra_op = 1;
  int openblas = 1;
  bool openblas_found = false;
};

// `num_threads` 0 means every core this process may run on. OpenBLAS gets the same count:
// LibTorch calls BLAS from one thread, so the two pools do not run at the same time.
ThreadPlan apply_thread_settings(int num_threads);

// The default for one of `local_world_size` ranks sharing this machine's cores (at least 1).
int threads_per_rank(int local_world_size);

}  // namespace fthost
