// The optimizers' hyperparameters, as the update loops (update_kernels.h) and the per-tensor
// steps (adam_update.h, sgd_update.h) both read them.
#pragma once

namespace ftoptim {

struct AdamHyperparameters {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled_weight_decay = false;  // AdamW: p *= 1 - lr * wd; Adam: grad += wd * p
  bool amsgrad = false;
};

struct SgdHyperparameters {
  double lr = 0.0;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

}  // namespace ftoptim
