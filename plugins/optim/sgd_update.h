// One SGD step (momentum, dampening, Nesterov, L2 weight decay) over one tensor in a single pass,
// with torch.optim.SGD's update rule.
#pragma once

#include "update_hyperparameters.h"

#include <ATen/core/Tensor.h>

namespace ftoptim {

// `momentum_buffer` is undefined without momentum; `first_step` makes the buffer a copy of the
// gradient, as torch.optim.SGD does on a parameter's first step. The gradient is read as
// `grad * gradient_scale`, rounded to its dtype, as adam_update does.
void sgd_update(const at::Tensor& param, const at::Tensor& grad, const at::Tensor& momentum_buffer, bool first_step,
                const SgdHyperparameters& h, double gradient_scale = 1.0);

}  // namespace ftoptim
