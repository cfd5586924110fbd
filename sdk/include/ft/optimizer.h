// Optimizer interface (`torch.optim.*` in configs). Factory arguments: the parameters to train.
#pragma once

#include <ft/errors.h>
#include <ft/kind.h>
#include <ft/model.h>

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
  // step() on every gradient times `gradient_scale` (the recipe's 1 / tokens), with the same
  // result, bit for bit, as multiplying the gradients in place first and then calling step().
  // An optimizer that reads each gradient once anyway folds the product into that read, which
  // saves the recipe a pass over every gradient, and returns true. The default returns false
  // and does nothing: the recipe then scales the gradients itself and calls step().
  virtual bool step_with_gradient_scale(double gradient_scale) {
    (void)gradient_scale;
    return false;
  }
  virtual void zero_grad(bool set_to_none = true) = 0;
  // Learning rate of the first parameter group, and a setter for all groups (schedulers use it).
  virtual double lr() const = 0;
  virtual void set_lr(double lr) = 0;

  // The per-parameter state a resumed run needs to continue bitwise (Adam's moments and step
  // count, SGD's momentum buffers), named `state.<i>.<field>` after torch.optim's state_dict,
  // where i indexes Args::params. Live tensors: copy them before the next step() if they must
  // outlive it. Hyperparameters (lr included) are not state: they come from the config and the
  // scheduler.
  virtual std::vector<NamedTensor> state() const {
    throw Error("this optimizer cannot export its state for a checkpoint");
  }
  // Replaces the state with one state() returned for the same parameters (copied in). Throws
  // ft::Error naming the tensor on an unknown name, a shape or dtype mismatch.
  virtual void load_state(const std::vector<NamedTensor>& state) {
    (void)state;
    throw Error("this optimizer cannot restore its state from a checkpoint");
  }
};

}  // namespace ft
