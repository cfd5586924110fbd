// One decoder layer: pre-norm attention and MLP blocks with residual adds (Llama), and with a
// second norm on each block's output before the add when the family has four norms (Gemma 2).
#pragma once

#include <ft/collectives.h>
#include <ft/nn/attention.h>
#include <ft/nn/decoder_config.h>
#include <ft/nn/feed_forward.h>
#include <ft/nn/rms_norm.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <memory>

namespace ft::nn {

class TransformerLayerImpl : public torch::nn::Module {
 public:
  TransformerLayerImpl(const DecoderConfig& cfg, std::int64_t layer, at::Tensor inverse_frequencies);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& positions, const at::Tensor& mask) const;
  RMSNorm sa_norm{nullptr};
  Attention attn{nullptr};
  RMSNorm sa_scale{nullptr};  // Gemma 2's post-attention norm (torchtune's name); nullptr otherwise
  RMSNorm mlp_norm{nullptr};
  FeedForward mlp{nullptr};
  RMSNorm mlp_scale{nullptr};  // Gemma 2's post-MLP norm; nullptr otherwise
  // Tensor parallelism: the group attention / the MLP is split over (their input's gradient is
  // summed over it in backward); nullptr: whole on this rank.
  std::shared_ptr<ft::Collectives> attn_split_over, mlp_split_over;
};
TORCH_MODULE(TransformerLayer);

}  // namespace ft::nn
