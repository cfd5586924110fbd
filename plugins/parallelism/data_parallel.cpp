// fthost.parallelism.ddp: every rank holds the whole model; gradients are summed across ranks
// unit by unit (one bucket per transformer layer, then the root), each bucket's all-reduce
// started as soon as autograd has finished that layer, so communication overlaps the rest of
// the backward pass. Micro-batches that do not end an optimizer step accumulate locally.
// A local gradient is freed once copied into its bucket. With the optimizer in backward, each
// launch first finishes the buckets launched before it (wait, step, free), so at most the newest
// bucket's reduced gradient is alive beside the layers autograd is still working on; release is
// per bucket (one layer), not per parameter, since a bucket is one all-reduce.
//
// Under expert parallelism a layer's experts are a bucket of their own, all-reduced only over the
// ranks holding the same experts.
//
// Only the model's leading layer units go out during the backward: a unit listed after them (an
// optional vision tower, a separately kept embedding) runs before them in the forward, so its
// gradient is complete only when the backward ends. An optional unit no rank used since the last
// step is not reduced at all: its parameters keep no gradient, and the optimizer leaves them
// untouched, as FSDP does (docs/parity.md, Llama 4).
#include "backward_hook.h"
#include "model_units.h"
#include "parallelism_components.h"
#include "same_experts_group.h"
#include "whole_model_strategy.h"

#include <ft/errors.h>
#include <ft/log.h>
#include <ft/model_sharding.h>
#include <ft/parallelism.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>

namespace ft_parallelism {

namespace {

class DataParallel final : public WholeModelStrategy, public ft::UnitHooks, public BackwardListener {
 public:
  DataParallel(std::shared_ptr<ft::Collectives> world, ft::GroupFactory new_group,
               std::shared_ptr<ft::Collectives> tensor_parallel)
      : WholeModelStrategy(std::move(tensor_parallel)), world_(std::move(world)), new_group_(std::move(new_group)) {}
  ~DataParallel() override {
    if (sharding_) sharding_->set_unit_hooks(nullptr);
  }

  int data_parallel_rank() const override { return world_->rank(); }
  int data_parallel_size() const override { return world_->size(); }

  std::vector<at::Tensor> parallelize(ft::Model& model) override {
    model_ = &model;
    groups_ = group_parameters(model);
    const std::vector<at::Tensor>& params = adopt_parameters(model);
    if (const auto& expert_parallel = norm().expert_parallel())
      same_experts_ =
          same_experts_group(new_group_, world_->rank(), world_->size(), world_->size(), expert_parallel->size());
    at::NoGradGuard no_grad;
    // Every rank starts from rank 0's weights (the experts: from the first rank holding them),
    // whatever it loaded or initialised.
    for (auto& group : groups_)
      for (auto& p : group.parameters) group_of(p).broadcast(p, 0);
    // Frozen parameters were broadcast with the rest; they have no gradient to reduce.
    for (auto& group : groups_)
      group.parameters.erase(std::remove_if(group.parameters.begin(), group.parameters.end(),
                                            [](const at::Tensor& p) { return !p.requires_grad(); }),
                             group.parameters.end());
    trainable_indices_.clear();
    for (const auto& group : groups_) {
      std::vector<std::size_t> indices;
      for (const auto& p : group.parameters)
        for (std::size_t i = 0; i < params.size(); ++i)
          if (params[i].unsafeGetTensorImpl() == p.unsafeGetTensorImpl()) indices.push_back(i);
      trainable_indices_.push_back(std::move(indices));
    }
    layer_count_ = leading_layer_count(groups_, groups_.size() - 1);  // group_parameters puts the root last
    sharding_ = ft::role_of<ft::ModelSharding>(model);
    if (sharding_) sharding_->set_unit_hooks(this);
    return params;
  }

  bool handles_expert_parallel() const override { return true; }

  void begin_micro_batch(bool syncs_gradients) override {
    syncing_ = syncs_gradients;
    launched_.assign(groups_.size(), false);
    in_flight_.clear();
  }

  void before_forward(std::size_t) override {}
  at::Tensor after_forward(std::size_t unit, at::Tensor output) override {
    if (!syncing_ || !at::GradMode::is_enabled()) return output;
    return notify_before_backward(output, *this, unit);
  }

  // The backward of `unit` starts: the unit after it is finished (autograd accumulates a
  // parameter's gradient before it moves on), so its bucket can go.
  void before_unit_backward(std::size_t unit) override {
    if (unit + 1 < layer_count_) launch(unit + 1);
  }

  void end_micro_batch() override {
    if (!syncing_) return;
    skip_unused_optional_units();
    for (std::size_t u = 0; u < groups_.size(); ++u) launch(u);
    for (auto& bucket : in_flight_) finish(bucket);
    in_flight_.clear();
  }

  void all_reduce_sum(at::Tensor& tensor) override { world_->all_reduce_sum(tensor); }
  // Scaling and clipping are WholeModelStrategy's: after the all-reduce every rank holds the
  // same gradients.
  void set_gradient_ready_callback(GradientReadyCallback ready) override { ready_ = std::move(ready); }

 private:
  struct Bucket {
    std::vector<at::Tensor> parameters;
    std::vector<std::size_t> trainable_indices;  // theirs in params()
    at::Tensor flat;
    std::unique_ptr<ft::PendingCollective> work;
  };

  // Expert parallelism: a share of the experts, whose gradient is summed over same_experts_ only.
  bool is_split_expert(const at::Tensor& parameter) const { return same_experts_ && norm().is_expert_share(parameter); }
  ft::Collectives& group_of(const at::Tensor& parameter) const {
    return is_split_expert(parameter) ? *same_experts_ : *world_;
  }

  // An optional unit no rank has a gradient for is not reduced (marked launched).
  void skip_unused_optional_units() {
    std::vector<std::size_t> optional;
    std::vector<bool> used_here;
    for (std::size_t u = 0; u < groups_.size(); ++u) {
      if (!groups_[u].optional || launched_[u]) continue;
      const auto& params = groups_[u].parameters;
      optional.push_back(u);
      used_here.push_back(
          std::any_of(params.begin(), params.end(), [](const at::Tensor& p) { return p.grad().defined(); }));
    }
    if (optional.empty()) return;
    const std::vector<bool> used = used_on_any_rank(*world_, used_here);
    for (std::size_t i = 0; i < optional.size(); ++i)
      if (!used[i]) launched_[optional[i]] = true;
  }

  // The unit's gradients go out in one bucket per group they are summed over.
  void launch(std::size_t unit) {
    if (launched_[unit]) return;
    launched_[unit] = true;
    std::vector<at::Tensor> shared, experts;
    std::vector<std::size_t> shared_indices, expert_indices;
    const auto& params = groups_[unit].parameters;
    for (std::size_t i = 0; i < params.size(); ++i) {
      const bool expert = is_split_expert(params[i]);
      (expert ? experts : shared).push_back(params[i]);
      (expert ? expert_indices : shared_indices).push_back(trainable_indices_[unit][i]);
    }
    launch_bucket(std::move(shared), std::move(shared_indices), *world_);
    if (!experts.empty()) launch_bucket(std::move(experts), std::move(expert_indices), *same_experts_);
  }

  void launch_bucket(std::vector<at::Tensor> params, std::vector<std::size_t> indices, ft::Collectives& group) {
    if (params.empty()) return;
    at::NoGradGuard no_grad;
    at::Tensor flat = at::zeros({total_numel(params)}, params[0].options().requires_grad(false));
    std::int64_t offset = 0;
    for (const auto& p : params) {
      if (p.grad().defined()) flat.narrow(0, offset, p.numel()).copy_(p.grad().reshape({-1}));
      p.mutable_grad() = at::Tensor();  // the bucket holds it now
      offset += p.numel();
    }
    auto work = group.all_reduce_sum_async(flat);
    in_flight_.push_back({std::move(params), std::move(indices), flat, std::move(work)});
    if (ready_) {
      for (std::size_t b = 0; b + 1 < in_flight_.size(); ++b) finish(in_flight_[b]);
      in_flight_.erase(in_flight_.begin(), in_flight_.end() - 1);
    }
  }

  // Waits for the bucket's all-reduce; its parameters' .grad become views of the reduced sum.
  void finish(Bucket& bucket) {
    bucket.work->wait();
    at::NoGradGuard no_grad;
    std::int64_t offset = 0;
    for (const auto& p : bucket.parameters) {
      p.mutable_grad() = bucket.flat.narrow(0, offset, p.numel()).view(p.sizes());
      offset += p.numel();
    }
    if (ready_)
      for (std::size_t index : bucket.trainable_indices) ready_(index);
  }

  std::shared_ptr<ft::Collectives> world_;
  ft::GroupFactory new_group_;
  // Expert parallelism: the ranks holding the same experts as this one; nullptr without it.
  std::shared_ptr<ft::Collectives> same_experts_;
  ft::Model* model_ = nullptr;
  ft::ModelSharding* sharding_ = nullptr;  // the model's sharding role; nullptr: one unit
  std::vector<ParameterGroup> groups_;
  std::size_t layer_count_ = 0;                              // the leading groups that are layers in forward order
  std::vector<std::vector<std::size_t>> trainable_indices_;  // per group: its parameters' indices in params()
  GradientReadyCallback ready_;
  std::vector<bool> launched_;
  std::vector<Bucket> in_flight_;
  bool syncing_ = true;
};

}  // namespace

void register_data_parallel(ft::Registry& reg) {
  reg.add<ft::Parallelism>("fthost.parallelism.ddp", ft::Schema{},
                           "data parallel: whole model per rank, gradients all-reduced per layer during backward",
                           [](const ft::ConfigNode& cfg, ft::Parallelism::Args args) {
                             if (!args.world) cfg.fail("_component_", "ddp needs the host's process group");
                             return std::make_unique<DataParallel>(args.world, args.new_group, args.tensor_parallel);
                           });
}

}  // namespace ft_parallelism
