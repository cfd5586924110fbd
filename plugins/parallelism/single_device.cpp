// fthost.parallelism.single: one rank, nothing to communicate.
#include "model_units.h"
#include "parallelism_components.h"

#include <ft/gradient_math.h>
#include <ft/parallelism.h>
#include <ft/registry.h>

#include <cmath>

namespace ft_parallelism {

namespace {

class SingleDevice final : public ft::Parallelism {
 public:
  int data_parallel_rank() const override { return 0; }
  int data_parallel_size() const override { return 1; }
  std::vector<at::Tensor> parallelize(ft::Model& model) override {
    params_ = model.module().parameters();
    return params_;
  }
  void begin_micro_batch(bool) override {}
  void end_micro_batch() override {}
  void all_reduce_sum(at::Tensor&) override {}
  void scale_gradients(double factor) override { ft::scale_gradients(params_, factor); }
  double clip_grad_norm(double max_norm) override { return ft::clip_grad_norm(params_, max_norm); }
  void with_full_parameters(ft::Model&, const std::function<void()>& fn) override { fn(); }
  std::int64_t local_parameter_bytes() const override { return total_bytes(params_); }

 private:
  std::vector<at::Tensor> params_;
};

}  // namespace

void register_single_device(ft::Registry& reg) {
  reg.add<ft::Parallelism>("fthost.parallelism.single", ft::Schema{}, "one rank: no communication",
                           [](const ft::ConfigNode& cfg, ft::Parallelism::Args args) {
                             if (args.world && args.world->size() > 1)
                               cfg.fail("_component_", "fthost.parallelism.single runs one rank, but this run has " +
                                                           std::to_string(args.world->size()) +
                                                           "; use fthost.parallelism.ddp or fthost.parallelism.fsdp");
                             return std::make_unique<SingleDevice>();
                           });
}

}  // namespace ft_parallelism
