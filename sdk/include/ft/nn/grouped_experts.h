// The experts of a mixture-of-experts layer as stacked tensors, one parameter per projection
// ([experts, out, in], each expert's slice laid out as a linear layer's weight): gated MLPs
// w2(act(w1 x) * w3 x) over rows already sorted by expert.
#pragma once

#include <ft/nn/feed_forward.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace ft::nn {

class GroupedExpertsImpl : public torch::nn::Module {
 public:
  GroupedExpertsImpl(std::int64_t num_experts, std::int64_t dim, std::int64_t hidden_dim,
                     MlpActivation activation = MlpActivation::SiLU);
  // x: [rows, dim] sorted by expert; rows_per_expert: [num_experts] int64 on x's device.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& rows_per_expert) const;
  std::int64_t num_experts() const { return w1.size(0); }
  at::Tensor w1;  // [experts, hidden, dim] gate
  at::Tensor w2;  // [experts, dim, hidden] down
  at::Tensor w3;  // [experts, hidden, dim] up
  MlpActivation activation;
};
TORCH_MODULE(GroupedExperts);

}  // namespace ft::nn
