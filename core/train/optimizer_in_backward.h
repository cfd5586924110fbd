// The optimizer in backward (optimizer_in_bwd): torchtune's optim_dict, one optimizer per
// trainable tensor, each stepped as soon as the parallelism strategy reports that tensor's
// gradient final, and its gradient freed right after, so the whole model's gradients never
// exist at once. To the rest of the recipe (the lr scheduler, the checkpoints, the logged lr)
// it is one ft::Optimizer: the same lr on every tensor, and a state in the ordinary layout.
#pragma once

#include <ft/config.h>
#include <ft/optimizer.h>
#include <ft/registry.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace fthost {

class OptimizerInBackward final : public ft::Optimizer {
 public:
  // Instantiates the `optimizer` table once per tensor of `params`, as the seed does.
  OptimizerInBackward(const ft::Registry& registry, const ft::ConfigNode& optimizer_table,
                      std::vector<at::Tensor> params);

  // Steps tensor `index` with its optimizer, then frees its gradient.
  void step_parameter(std::size_t index);

  // The steps ran in backward: calling step() is a recipe error and throws.
  void step() override;
  void zero_grad(bool set_to_none = true) override;
  // The first tensor's lr (the seed logs its first optimizer's), and a setter for every tensor.
  double lr() const override;
  void set_lr(double lr) override;
  // Each tensor's optimizer holds its state as `state.0.<field>`: exported as
  // `state.<index>.<field>`, exactly as one optimizer over every tensor names it, so a
  // checkpoint does not depend on optimizer_in_bwd.
  std::vector<ft::NamedTensor> state() const override;
  void load_state(const std::vector<ft::NamedTensor>& state) override;

  std::size_t size() const { return params_.size(); }
  // Of the first size() steps (one backward pass), the most trainable tensors that held a
  // gradient at once when a step ran: how much of the model's gradient ever existed at a time.
  std::size_t most_gradients_alive() const { return most_gradients_alive_; }

 private:
  std::vector<at::Tensor> params_;
  std::vector<std::shared_ptr<ft::Optimizer>> optimizers_;
  std::size_t observed_steps_ = 0;
  std::size_t most_gradients_alive_ = 0;
};

}  // namespace fthost
