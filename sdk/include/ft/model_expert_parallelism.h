// Model role: expert parallelism. The experts of every mixture-of-experts layer are split across
// a group of data-parallel ranks: each rank keeps an equal, consecutive share of them, and each
// layer sends every token to the ranks of the experts it chose and back by all-to-all. The other
// parameters stay whole (or tensor-parallel slices) and data-parallel as before.
#pragma once

#include <ft/collectives.h>
#include <ft/model.h>

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <vector>

namespace ft {

class ModelExpertParallelism {
 public:
  static constexpr ModelRole role = ModelRole::ExpertParallelism;
  virtual ~ModelExpertParallelism() = default;
  // Whether the model has any experts to split (a dense model plays the role but has none).
  virtual bool has_experts() const = 0;
  // The number of experts of each mixture-of-experts layer (every layer's count divides by the
  // group size for expert parallelism to apply); 0 for a dense model.
  virtual std::int64_t experts_per_layer() const = 0;
  // Rank r of `group` keeps experts [r * E / n, (r + 1) * E / n) of every mixture-of-experts
  // layer. Called once, after the weights are loaded and tensor parallelism is applied, before
  // the parallelism strategy distributes the model. `group` is consecutive data-parallel ranks:
  // data-parallel rank d is rank d % n of the group d / n. Throws ft::Error when a layer's
  // experts do not divide by the group's size.
  virtual void apply_expert_parallel(const std::shared_ptr<Collectives>& group) = 0;
  // The group passed to apply_expert_parallel; nullptr before.
  virtual std::shared_ptr<Collectives> expert_parallel_group() const = 0;
  // The parameters apply_expert_parallel split: each rank of the group holds different experts,
  // so their gradients are summed only over the ranks holding the same experts.
  virtual std::vector<at::Tensor> expert_parallel_shards() = 0;
  // Collective over the group: runs `fn` with every expert parameter whole (readable through
  // hf_parameters()), then restores this rank's share.
  virtual void with_full_expert_parallel_parameters(const std::function<void()>& fn) = 0;
};

}  // namespace ft
