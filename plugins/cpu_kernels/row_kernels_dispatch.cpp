// Chooses the row kernels' instruction set once per process.
#include <ft_kernels/row_kernels.h>

#include <ft/errors.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace ft_kernels {
namespace baseline {
RowKernels make_row_kernels(const char* name);
}
namespace avx2 {
RowKernels make_row_kernels(const char* name);
}

namespace {

// FT_CPU_KERNELS: unset or "avx2" (the fastest this CPU runs), "baseline" (the portable copy), or
// "aten" (no fused kernel: every operation takes LibTorch's reference path, for measuring what
// the kernels bring). Anything else is refused, not ignored.
const char* forced_kernels() {
  static const char* forced = [] {
    const char* value = std::getenv("FT_CPU_KERNELS");
    if (!value || !*value) return static_cast<const char*>(nullptr);
    for (const char* known : {"avx2", "baseline", "aten"})
      if (std::strcmp(value, known) == 0) return known;
    throw ft::Error(std::string("FT_CPU_KERNELS: expected \"avx2\", \"baseline\" or \"aten\" (or unset), got \"") +
                    value + "\"");
  }();
  return forced;
}

}  // namespace

bool fused_kernels_enabled() {
  static const bool enabled = !(forced_kernels() && std::strcmp(forced_kernels(), "aten") == 0);
  return enabled;
}

const RowKernels& row_kernels() {
  static const RowKernels chosen = [] {
    const char* forced = forced_kernels();
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
