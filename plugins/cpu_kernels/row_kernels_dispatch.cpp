// Chooses the row kernels' instruction set once per process.
#include <ft_kernels/row_kernels.h>

#include <cstdlib>
#include <cstring>

namespace ft_kernels {
namespace baseline {
RowKernels make_row_kernels(const char* name);
}
namespace avx2 {
RowKernels make_row_kernels(const char* name);
}

const RowKernels& row_kernels() {
  static const RowKernels chosen = [] {
    const char* forced = std::getenv("FT_CPU_KERNELS");
    const bool portable = forced && std::strcmp(forced, "baseline") == 0;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (!portable && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      return avx2::make_row_kernels("avx2");
#else
    (void)portable;
#endif
    return baseline::make_row_kernels("baseline");
  }();
  return chosen;
}

}  // namespace ft_kernels
