// The three thread pools a LibTorch CPU run has, set deliberately (their defaults oversubscribe
// a small machine and cost up to 2x): LibTorch's intra-op pool, OpenBLAS's own pool (which
// torch::set_num_threads does not reach), and the OpenMP wait policy, which the OpenMP runtime
// reads once when it loads (set by the executable before it loads LibTorch: training_library.h).
#pragma once

namespace fthost {

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
