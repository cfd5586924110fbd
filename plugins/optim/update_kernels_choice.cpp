// Which copy of the update loops this process runs (update_kernels.h), by the same FT_CPU_KERNELS
// and CPU checks as every other fused CPU kernel.
#include "update_kernels.h"

#include <ft_kernels/kernel_choice.h>

namespace ftoptim {

bool update_kernels_use_avx2() {
  static const bool avx2 = !ft_kernels::portable_kernels_forced() && ft_kernels::cpu_has_avx2();
  return avx2;
}

}  // namespace ftoptim
