// One decoder layer: pre-norm attention and feed-forward blocks with residual adds, and a second
// norm on a block's output before the add where the builder gives one (Gemma 2's four norms).
// Every part is a module the family's builder composed and hands in.
#pragma once

#include <ft/collectives.h>
#include <ft/nn/attention.h>
#include <ft/nn/feed_forward_block.h>
#include <ft/nn/norm.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <memory>

namespace ft::nn {

struct TransformerLayerParts {
  Norm sa_norm;  // before attention
  Attention attn{nullptr};
  Norm sa_scale;  // after attention, before the residual add; nullptr: none
  Norm mlp_norm;  // before the feed-forward block
  FeedForwardBlock mlp;
  Norm mlp_scale;  // after the feed-forward block, before the add; nullptr: none
};

class TransformerLayerImpl : public torch::nn::Module {
 public:
  explicit TransformerLayerImpl(TransformerLayerParts parts);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& positions, const at::Tensor& mask,
                     const DocumentLengths& documents = {}) const;
  Norm sa_norm;
  Attention attn{nullptr};
  Norm sa_scale;  // torchtune's name for Gemma 2's post-attention norm
  Norm mlp_norm;
  FeedForwardBlock mlp;
  Norm mlp_scale;
  // Tensor parallelism: the group attention / the MLP is split over (their input's gradient is
  // summed over it in backward); nullptr: whole on this rank.
  std::shared_ptr<ft::Collectives> attn_split_over, mlp_split_over;
};
TORCH_MODULE(TransformerLayer);

}  // namespace ft::nn
