// fthost.parallelism.single: one rank, nothing to communicate. For the optimizer in backward a
// parameter's gradient is final the moment autograd accumulates it: a post hook on each
// parameter's gradient accumulator reports it there (torch's post-accumulate-grad hook).
#include "parallelism_components.h"
#include "whole_model_strategy.h"

#include <ft/parallelism.h>
#include <ft/registry.h>
#include <ft/torch_compat.h>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <cstdint>
#include <memory>

namespace ft_parallelism {

namespace {

class SingleDevice final : public WholeModelStrategy {
 public:
  explicit SingleDevice(std::shared_ptr<ft::Collectives> tensor_parallel)
      : WholeModelStrategy(std::move(tensor_parallel)) {}
  int data_parallel_rank() const override { return 0; }
  int data_parallel_size() const override { return 1; }
  std::vector<at::Tensor> parallelize(ft::Model& model) override { return adopt_parameters(model); }
  void begin_micro_batch(bool syncs_gradients) override { syncing_ = syncs_gradients; }
  void end_micro_batch() override {}
  void all_reduce_sum(at::Tensor&) override {}

  void set_gradient_ready_callback(GradientReadyCallback ready) override {
    ready_ = std::move(ready);
    if (!hooks_.empty()) return;
    for (std::size_t i = 0; i < params().size(); ++i) {
      // Held here: a parameter keeps its accumulator only weakly, and a new one would lack the hook.
      auto accumulator = torch::autograd::impl::grad_accumulator(params()[i]);
      const auto key = accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
          [this, i](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
            if (syncing_ && ready_) ready_(i);
            return outputs;
          }));
      hooks_.push_back({std::move(accumulator), key});
    }
  }

  ~SingleDevice() override {
    for (auto& hook : hooks_) hook.accumulator->del_post_hook(hook.key);
  }

 private:
  struct AccumulatorHook {
    ft::compat::AutogradNodePtr accumulator;
    std::uintptr_t key;
  };
  GradientReadyCallback ready_;
  bool syncing_ = true;
  std::vector<AccumulatorHook> hooks_;
};

}  // namespace

void register_single_device(ft::Registry& reg) {
  reg.add<ft::Parallelism>("fthost.parallelism.single", ft::Schema{}, "one rank: no communication",
                           [](const ft::ConfigNode& cfg, ft::Parallelism::Args args) {
                             if (args.world && args.world->size() > 1)
                               cfg.fail("_component_", "fthost.parallelism.single runs one rank, but this run has " +
                                                           std::to_string(args.world->size()) +
                                                           "; use fthost.parallelism.ddp or fthost.parallelism.fsdp");
                             return std::make_unique<SingleDevice>(args.tensor_parallel);
                           });
}

}  // namespace ft_parallelism
