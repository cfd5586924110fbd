// How a step's gradients become a parameter update, one policy per way the seed does it: after
// backward (normalise by the step's tokens, clip if asked, step, zero the gradients), or inside
// backward (optimizer_in_bwd: each tensor stepped as its gradient becomes final). train_step stays
// the seed's verbs — forward, loss, backward, update — whichever policy the config picks.
#pragma once

#include "train/optimizer_in_backward.h"

#include <ft/optimizer.h>
#include <ft/parallelism.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>

namespace fthost {

class OptimizerStepPolicy {
 public:
  virtual ~OptimizerStepPolicy() = default;
  // Whether backward needs the step's token count over every rank (to normalise gradients as
  // they arrive), so the count is summed before the first backward instead of after the last.
  virtual bool needs_step_tokens_before_backward() const = 0;
  // What backward runs on for one micro-batch: its loss summed over its tokens, and the step's
  // token count over every rank when needs_step_tokens_before_backward().
  virtual at::Tensor backward_target(const at::Tensor& loss_sum, std::int64_t step_tokens) const = 0;
  // After the step's last backward: the update. The gradient norm before clipping when
  // clip_grad_norm is set.
  virtual std::optional<double> update(std::int64_t step_tokens) = 0;
};

// The seed's default: gradients arrive summed over ranks and micro-batches, one division by the
// step's tokens normalises them (folded into the optimizer's pass where it can and no clipping
// needs them normalised first).
std::unique_ptr<OptimizerStepPolicy> step_after_backward(ft::Parallelism& parallelism, ft::Optimizer& optimizer,
                                                         std::optional<double> clip_grad_norm);

// optimizer_in_bwd (one micro-batch per step and no clipping, which the settings enforce): the
// loss is normalised before backward and the strategy's gradient-ready reports step each tensor.
std::unique_ptr<OptimizerStepPolicy> step_in_backward(ft::Parallelism& parallelism,
                                                      std::shared_ptr<OptimizerInBackward> optimizer);

}  // namespace fthost
