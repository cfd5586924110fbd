// Which copy of the update loops this process runs (update_kernels.h).
#include "update_kernels.h"

#include <cstdlib>
#include <cstring>

namespace ftoptim {

bool cpu_supports_avx2() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0;
#else
  return false;
#endif
}

bool update_kernels_use_avx2() {
  static const bool avx2 = [] {
    // FT_CPU_KERNELS is validated where the model's kernels read it; here only its request for
    // the portable copy matters.
    const char* forced = std::getenv("FT_CPU_KERNELS");
    return !(forced && std::strcmp(forced, "baseline") == 0) && cpu_supports_avx2();
  }();
  return avx2;
}

}  // namespace ftoptim
