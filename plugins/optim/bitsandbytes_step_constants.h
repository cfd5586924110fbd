// The per-element constants of one bitsandbytes Adam step, in float32 as bitsandbytes' torch ops
// use them: one computation for the CPU kernel (bitsandbytes_adam_update.cpp) and the CUDA one
// (cuda/bitsandbytes_adam_kernels.cu), so both round the same values.
#pragma once

#include "update_hyperparameters.h"

#include <cmath>
#include <cstdint>

namespace ftoptim {

struct BitsAndBytesStepConstants {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, correction2, eps, decay, step_size, scale;
  bool decays;
};

inline BitsAndBytesStepConstants bitsandbytes_step_constants(std::int64_t step, const AdamHyperparameters& h,
                                                             double gradient_scale) {
  const double correction1 = 1.0 - std::pow(h.beta1, static_cast<double>(step));
  const double correction2 = std::sqrt(1.0 - std::pow(h.beta2, static_cast<double>(step)));
  BitsAndBytesStepConstants c{};
  c.beta1 = static_cast<float>(h.beta1);
  c.one_minus_beta1 = static_cast<float>(1.0 - h.beta1);
  c.beta2 = static_cast<float>(h.beta2);
  c.one_minus_beta2 = static_cast<float>(1.0 - h.beta2);
  c.correction2 = static_cast<float>(correction2);
  c.eps = static_cast<float>(h.eps);
  c.decays = h.weight_decay > 0.0;
  c.decay = static_cast<float>(1.0 - h.lr * h.weight_decay);
  c.step_size = static_cast<float>(-h.lr / correction1);
  c.scale = static_cast<float>(gradient_scale);
  return c;
}

}  // namespace ftoptim
