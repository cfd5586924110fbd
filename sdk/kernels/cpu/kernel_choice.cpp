// FT_CPU_KERNELS and the CPU's features (ft_kernels/kernel_choice.h), each read once per process.
#include <ft_kernels/kernel_choice.h>

#include <ft/errors.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace ft_kernels {
namespace {

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

bool forced_to(const char* name) { return forced_kernels() && std::strcmp(forced_kernels(), name) == 0; }

}  // namespace

bool fused_kernels_enabled() {
  static const bool enabled = !forced_to("aten");
  return enabled;
}

bool portable_kernels_forced() {
  static const bool portable = forced_to("baseline");
  return portable;
}

// __builtin_cpu_supports takes only a literal.
bool cpu_has_avx2() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0;
#else
  return false;
#endif
}

bool cpu_has_fma() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("fma") != 0;
#else
  return false;
#endif
}

}  // namespace ft_kernels
