// A linear layer y = x W^T + b whose weight may be one rank's slice under tensor parallelism:
// colwise (a slice of the output features: nothing changes in the forward) or rowwise (a slice
// of the input features: the partial outputs are summed over the group, then the bias added).
#pragma once

#include <ft/collectives.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <memory>

namespace ft::nn {

class LinearImpl : public torch::nn::Module {
 public:
  LinearImpl(std::int64_t in_features, std::int64_t out_features, bool bias);
  at::Tensor forward(const at::Tensor& x) const;
  at::Tensor weight;  // [out, in]
  at::Tensor bias;    // [out] or undefined
  // Rowwise tensor parallelism: `weight` holds a slice of the input features and the partial
  // outputs are summed over this group (before the bias). nullptr: the layer is whole.
  std::shared_ptr<ft::Collectives> sums_output_over;
};
TORCH_MODULE(Linear);

}  // namespace ft::nn
