#include "train/optimizer_step_policy.h"

#include <ft/log.h>

#include <utility>

namespace fthost {

namespace {

class StepAfterBackward final : public OptimizerStepPolicy {
 public:
  StepAfterBackward(ft::Parallelism& parallelism, ft::Optimizer& optimizer, std::optional<double> clip_grad_norm)
      : parallelism_(parallelism), optimizer_(optimizer), clip_grad_norm_(clip_grad_norm) {}

  bool needs_step_tokens_before_backward() const override { return false; }
  at::Tensor backward_target(const at::Tensor& loss_sum, std::int64_t) const override { return loss_sum; }

  std::optional<double> update(std::int64_t step_tokens) override {
    const double normalisation = 1.0 / static_cast<double>(step_tokens);
    std::optional<double> grad_norm;
    if (clip_grad_norm_) {
      parallelism_.scale_gradients(normalisation);
      grad_norm = parallelism_.clip_grad_norm(*clip_grad_norm_);
      optimizer_.step();
    } else if (!optimizer_.step_with_gradient_scale(normalisation)) {
      parallelism_.scale_gradients(normalisation);
      optimizer_.step();
    }
    optimizer_.zero_grad(true);
    return grad_norm;
  }

 private:
  ft::Parallelism& parallelism_;
  ft::Optimizer& optimizer_;
  const std::optional<double> clip_grad_norm_;
};

class StepInBackward final : public OptimizerStepPolicy {
 public:
  StepInBackward(ft::Parallelism& parallelism, std::shared_ptr<OptimizerInBackward> optimizer)
      : optimizer_(std::move(optimizer)) {
    parallelism.set_gradient_ready_callback(
        [optimizer = optimizer_](std::size_t index) { optimizer->step_parameter(index); });
    ft::log::info("optimizer in backward: {} optimizers, one per trainable tensor", optimizer_->size());
  }

  bool needs_step_tokens_before_backward() const override { return true; }
  // Gradients arrive summed over ranks: 1 / tokens normalises them (the seed's dp / tokens with
  // its averaging FSDP).
  at::Tensor backward_target(const at::Tensor& loss_sum, std::int64_t step_tokens) const override {
    return loss_sum * (1.0 / static_cast<double>(step_tokens));
  }

  std::optional<double> update(std::int64_t) override {
    if (!reported_gradients_alive_) {
      reported_gradients_alive_ = true;
      ft::log::info("optimizer in backward: at most {} of {} trainable tensors held a gradient when one stepped",
                    optimizer_->most_gradients_alive(), optimizer_->size());
    }
    return std::nullopt;  // every tensor already stepped in backward
  }

 private:
  std::shared_ptr<OptimizerInBackward> optimizer_;
  bool reported_gradients_alive_ = false;  // after the run's first step
};

}  // namespace

std::unique_ptr<OptimizerStepPolicy> step_after_backward(ft::Parallelism& parallelism, ft::Optimizer& optimizer,
                                                         std::optional<double> clip_grad_norm) {
  return std::make_unique<StepAfterBackward>(parallelism, optimizer, clip_grad_norm);
}

std::unique_ptr<OptimizerStepPolicy> step_in_backward(ft::Parallelism& parallelism,
                                                      std::shared_ptr<OptimizerInBackward> optimizer) {
  return std::make_unique<StepInBackward>(parallelism, std::move(optimizer));
}

}  // namespace fthost
