// The optimizers' per-element update loops, compiled twice: for baseline x86-64 and for AVX2
// (chosen once per process by update_kernels_isa()). Both copies compute every value with the
// same operations in the same order and without contracting a multiply-add into an FMA, so a
// step gives the same bits on every CPU; AVX2 only does eight elements at a time.
#pragma once

#include "update_hyperparameters.h"

#include <c10/util/BFloat16.h>

#include <cstdint>

namespace ftoptim {

#define FT_OPTIM_DECLARE_UPDATE_KERNELS(isa)                                                                         \
  namespace isa {                                                                                                    \
  void adam_range(float* p, const float* g, float* m, float* v, float* vmax, std::int64_t begin, std::int64_t end,   \
                  std::int64_t step, const AdamHyperparameters& h, double gradient_scale);                           \
  void adam_range(double* p, const double* g, double* m, double* v, double* vmax, std::int64_t begin,                \
                  std::int64_t end, std::int64_t step, const AdamHyperparameters& h, double gradient_scale);         \
  void adam_range(c10::BFloat16* p, const c10::BFloat16* g, c10::BFloat16* m, c10::BFloat16* v, c10::BFloat16* vmax, \
                  std::int64_t begin, std::int64_t end, std::int64_t step, const AdamHyperparameters& h,             \
                  double gradient_scale);                                                                            \
  void sgd_range(float* p, const float* g, float* buf, bool first_step, std::int64_t begin, std::int64_t end,        \
                 const SgdHyperparameters& h, double gradient_scale);                                                \
  void sgd_range(double* p, const double* g, double* buf, bool first_step, std::int64_t begin, std::int64_t end,     \
                 const SgdHyperparameters& h, double gradient_scale);                                                \
  void sgd_range(c10::BFloat16* p, const c10::BFloat16* g, c10::BFloat16* buf, bool first_step, std::int64_t begin,  \
                 std::int64_t end, const SgdHyperparameters& h, double gradient_scale);                              \
  }

FT_OPTIM_DECLARE_UPDATE_KERNELS(baseline)
FT_OPTIM_DECLARE_UPDATE_KERNELS(avx2)
#undef FT_OPTIM_DECLARE_UPDATE_KERNELS

// True when this process runs the AVX2 copy: the CPU has AVX2 and FT_CPU_KERNELS does not ask for
// the portable one ("baseline").
bool update_kernels_use_avx2();

// How many distinct threads ran an at::parallel_for of many small items, compiled as the update
// loops' callers are: at::get_num_threads() when the updates run in parallel, 1 when this library
// was compiled without OpenMP (cmake/FthostLibTorch.cmake).
int threads_in_update_loops();

}  // namespace ftoptim
