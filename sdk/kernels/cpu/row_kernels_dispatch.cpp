// Chooses the row kernels' instruction set once per process.
#include <ft_kernels/kernel_choice.h>
#include <ft_kernels/row_kernels.h>

namespace ft_kernels {
namespace baseline {
RowKernels make_row_kernels(const char* name);
}
namespace avx2 {
RowKernels make_row_kernels(const char* name);
}

const RowKernels& row_kernels() {
  static const RowKernels chosen = [] {
    if (!portable_kernels_forced() && cpu_has_avx2() && cpu_has_fma()) return avx2::make_row_kernels("avx2");
    return baseline::make_row_kernels("baseline");
  }();
  return chosen;
}

}  // namespace ft_kernels
