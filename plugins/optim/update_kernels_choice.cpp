// Which copy of the update loops this process runs (update_kernels.h), by the same FT_CPU_KERNELS
// and CPU checks as every other fused CPU kernel, and whether its loops run in parallel.
#include "update_kernels.h"

#include <ft_kernels/kernel_choice.h>
#include <ft_kernels/parallel_loops.h>

namespace ftoptim {

bool update_kernels_use_avx2() {
  static const bool avx2 = !ft_kernels::portable_kernels_forced() && ft_kernels::cpu_has_avx2();
  return avx2;
}

namespace {
struct UpdateLoops;
}  // namespace

int threads_in_update_loops() { return ft_kernels::threads_running_parallel_loops<UpdateLoops>(); }

}  // namespace ftoptim
