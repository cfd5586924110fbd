// A fusion layer (torchtune's TransformerCrossAttentionLayer, Hugging Face's
// MllamaCrossAttentionDecoderLayer): pre-norm cross-attention over the encoder's states and a
// feed-forward block, each gated before its residual add. A text position allowed no encoder
// state passes through unchanged: both blocks' outputs are zeroed on its row, as Meta's reference
// and torchtune compute it (docs/parity.md: transformers zeroes only the feed-forward's).
#pragma once

#include <ft/nn/cross_attention.h>
#include <ft/nn/feed_forward_block.h>
#include <ft/nn/norm.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

namespace ft::nn {

struct CrossAttentionLayerParts {
  Norm ca_norm;  // before cross-attention
  CrossAttention attn{nullptr};
  Norm ca_scale;  // on the attention's output before the add (a tanh gate); nullptr: none
  Norm mlp_norm;
  FeedForwardBlock mlp;
  Norm mlp_scale;  // on the feed-forward's output before the add; nullptr: none
};

class CrossAttentionLayerImpl : public torch::nn::Module {
 public:
  explicit CrossAttentionLayerImpl(CrossAttentionLayerParts parts);
  // x: [b, s, dim]; encoder: [b, n, encoder_dim], undefined for text without images (the layer
  // is then skipped: x comes back as is); allowed: [b, s, n] bool.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& encoder, const at::Tensor& allowed) const;
  Norm ca_norm;
  CrossAttention attn{nullptr};
  Norm ca_scale;
  Norm mlp_norm;
  FeedForwardBlock mlp;
  Norm mlp_scale;
};
TORCH_MODULE(CrossAttentionLayer);

}  // namespace ft::nn
