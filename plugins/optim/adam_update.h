// One Adam / AdamW step over one tensor in a single pass: weight decay, both running moments,
// bias correction and the parameter update are computed per element while it is in registers,
// instead of torch::optim's chain of ten whole-tensor operations (each a pass over memory).
#pragma once

#include "update_hyperparameters.h"

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace ftoptim {

// `step` is the step count after this update (1 on the first). The gradient is read as
// `grad * gradient_scale`, rounded to its dtype: the result equals scaling the gradient in place
// first. The moments have the parameter's
// shape and dtype; `max_exp_avg_sq` is used only with amsgrad. Float, double and bfloat16
// tensors; bfloat16 is computed in float and rounded once per stored value.
void adam_update(const at::Tensor& param, const at::Tensor& grad, const at::Tensor& exp_avg,
                 const at::Tensor& exp_avg_sq, const at::Tensor& max_exp_avg_sq, std::int64_t step,
                 const AdamHyperparameters& h, double gradient_scale = 1.0);

}  // namespace ftoptim
