// Optimizer interface (`torch.optim.*` in configs). Factory arguments: the parameters to train.
#pragma once

#include <ft/kind.h>

#include <ATen/core/Tensor.h>

#include <vector>

namespace ft {

class Optimizer {
 public:
  static constexpr Kind kind = Kind::Optimizer;
  struct Args {
    std::vector<at::Tensor> params;
  };

  virtual ~Optimizer() = default;
  virtual void step() = 0;
  virtual void zero_grad(bool set_to_none = true) = 0;
  // Learning rate of the first parameter group, and a setter for all groups (schedulers use it).
  virtual double lr() const = 0;
  virtual void set_lr(double lr) = 0;
};

}  // namespace ft
