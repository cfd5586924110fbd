// What the strategies that keep the whole model on every rank share (fthost.parallelism.single
// and fthost.parallelism.ddp): once a step's gradients are reduced, each rank holds the same
// whole gradients, so scaling and clipping are local, and the optimizer state is whole, except
// that under tensor parallelism each rank of a tensor-parallel group holds different slices, and
// under expert parallelism each rank of an expert-parallel group different experts.
// FSDP shards parameters and gradients and has its own.
#pragma once

#include "split_parameter_norm.h"

#include <ft/collectives.h>
#include <ft/model.h>
#include <ft/parallelism.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace ft_parallelism {

class WholeModelStrategy : public ft::Parallelism {
 public:
  void scale_gradients(double factor) override;
  // The local norm is the norm (with tensor or expert parallelism, the split parameters' part
  // summed over their groups).
  double clip_grad_norm(double max_norm) override;
  void with_full_parameters(ft::Model&, const std::function<void()>& fn) override { fn(); }
  bool shards_optimizer_state() const override { return norm_.active(); }
  std::int64_t local_parameter_bytes() const override;

 protected:
  explicit WholeModelStrategy(std::shared_ptr<ft::Collectives> tensor_parallel)
      : tensor_parallel_(std::move(tensor_parallel)) {}
  // The parameters the strategy steps, in the model's order: what parallelize() returns.
  const std::vector<at::Tensor>& adopt_parameters(ft::Model& model);
  const std::vector<at::Tensor>& params() const { return params_; }
  const SplitParameterNorm& norm() const { return norm_; }

 private:
  std::shared_ptr<ft::Collectives> tensor_parallel_;
  SplitParameterNorm norm_;
  std::vector<at::Tensor> params_;
};

}  // namespace ft_parallelism
