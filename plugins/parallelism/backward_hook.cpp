#include "backward_hook.h"

#include <torch/csrc/autograd/custom_function.h>

#include <cstdint>

namespace ft_parallelism {

namespace {

struct NotifyBeforeBackward : public torch::autograd::Function<NotifyBeforeBackward> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, std::int64_t listener,
                            std::int64_t unit) {
    ctx->saved_data["listener"] = listener;
    ctx->saved_data["unit"] = unit;
    return x.view_as(x);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    // An autograd context stores only IValues, so the listener travels as its address.
    auto* listener =
        reinterpret_cast<BackwardListener*>(static_cast<std::intptr_t>(ctx->saved_data["listener"].toInt()));
    listener->before_unit_backward(static_cast<std::size_t>(ctx->saved_data["unit"].toInt()));
    return {grads[0], at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor notify_before_backward(const at::Tensor& output, BackwardListener& listener, std::size_t unit) {
  return NotifyBeforeBackward::apply(output, static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(&listener)),
                                     static_cast<std::int64_t>(unit));
}

}  // namespace ft_parallelism
