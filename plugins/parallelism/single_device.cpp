// fthost.parallelism.single: one rank, nothing to communicate. For the optimizer in backward a
// parameter's gradient is final the moment autograd accumulates it: a post hook on each
// parameter's gradient accumulator reports it there (torch's post-accumulate-grad hook).
#include "model_units.h"
#include "parallelism_components.h"
#include "tensor_parallel_norm.h"

#include <ft/gradient_math.h>
#include <ft/parallelism.h>
#include <ft/registry.h>
#include <ft/torch_compat.h>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <cmath>
#include <cstdint>
#include <memory>

namespace ft_parallelism {

namespace {

class SingleDevice final : public ft::Parallelism {
 public:
  explicit SingleDevice(std::shared_ptr<ft::Collectives> tensor_parallel)
      : tensor_parallel_(std::move(tensor_parallel)) {}
  int data_parallel_rank() const override { return 0; }
  int data_parallel_size() const override { return 1; }
  std::vector<at::Tensor> parallelize(ft::Model& model) override {
    params_ = model.module().parameters();
    tp_norm_ = TensorParallelNorm(tensor_parallel_, model);
    return params_;
  }
  void begin_micro_batch(bool syncs_gradients) override { syncing_ = syncs_gradients; }
  void end_micro_batch() override {}
  void all_reduce_sum(at::Tensor&) override {}
  void scale_gradients(double factor) override { ft::scale_gradients(params_, factor); }
  double clip_grad_norm(double max_norm) override {
    if (!tp_norm_.active()) return ft::clip_grad_norm(params_, max_norm);
    const double norm = std::sqrt(tp_norm_.total_squared(tp_norm_.squares_of(params_)));
    ft::clip_gradients(params_, norm, max_norm);
    return norm;
  }
  void with_full_parameters(ft::Model&, const std::function<void()>& fn) override { fn(); }
  // Under tensor parallelism each rank steps different slices.
  bool shards_optimizer_state() const override { return tp_norm_.active(); }
  std::int64_t local_parameter_bytes() const override { return total_bytes(params_); }

  void set_gradient_ready_callback(GradientReadyCallback ready) override {
    ready_ = std::move(ready);
    if (!hooks_.empty()) return;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      // Held here: a parameter keeps its accumulator only weakly, and a new one would lack the hook.
      auto accumulator = torch::autograd::impl::grad_accumulator(params_[i]);
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
  std::shared_ptr<ft::Collectives> tensor_parallel_;
  TensorParallelNorm tp_norm_;
  std::vector<at::Tensor> params_;
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
