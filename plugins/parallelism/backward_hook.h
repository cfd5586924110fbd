// Running code at the moment autograd reaches a tensor in the backward pass: the strategies
// use it to act just before a sharding unit's backward (gather its parameters again, reduce the
// gradients of the unit after it).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>

namespace ft_parallelism {

class BackwardListener {
 public:
  virtual ~BackwardListener() = default;
  // Called once per backward pass, when the gradient of the unit's output is ready.
  virtual void before_unit_backward(std::size_t unit) = 0;
};

// Returns a tensor equal to `output` whose backward first calls listener.before_unit_backward(unit).
// `listener` must outlive the backward pass.
at::Tensor notify_before_backward(const at::Tensor& output, BackwardListener& listener, std::size_t unit);

}  // namespace ft_parallelism
