// Llama 3.2 Vision's language model (Hugging Face's MllamaTextModel with its lm_head, torchtune's
// fusion decoder): a Llama 3 decoder whose layer stack holds cross-attention layers over the
// image encoder's states at some indices, and whose embedding has rows past the vocabulary for
// the image token and its kin (torchtune's FusionEmbedding: trainable apart from the rest).
#pragma once

#include "layer_runner.h"
#include "vision_language_config.h"

#include <ft/nn/cross_attention_layer.h>
#include <ft/nn/norm.h>
#include <ft/nn/transformer_layer.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

#include <vector>

namespace ft_models {

class FusionDecoderImpl : public torch::nn::Module {
 public:
  explicit FusionDecoderImpl(const FusionDecoderConfig& config);
  // tokens: [b, s]; positions: [b, s] or undefined (0..s-1); encoder: [b, n, dim], the projected
  // image states, undefined for text alone (the cross-attention layers are then skipped, as
  // Hugging Face does); encoder_allowed: [b, s, n] bool. Returns the final hidden state [b, s, dim].
  at::Tensor hidden(const at::Tensor& tokens, const at::Tensor& positions, const at::Tensor& encoder,
                    const at::Tensor& encoder_allowed) const;
  // [b, s, vocab]: the vocabulary only, not the fusion rows (Hugging Face's lm_head).
  at::Tensor logits(const at::Tensor& hidden) const;
  // The output projection, about to be used (a separately sharded one is gathered first).
  const at::Tensor& output_weight() const;

  const FusionDecoderConfig& config() const { return config_; }
  at::Tensor tok_embeddings;     // [vocab, dim]
  at::Tensor fusion_embeddings;  // [fusion vocab, dim]: the ids vocab, vocab + 1, ...
  // The whole stack in order; entry i is one of the two below.
  std::vector<ft::nn::TransformerLayer> self_attention_layers;
  std::vector<ft::nn::CrossAttentionLayer> cross_attention_layers;
  ft::nn::Norm norm;
  at::Tensor output;  // [vocab, dim]
  // Layer i is unit first_unit + i of the runner; nullptr: run plainly.
  std::shared_ptr<const LayerRunner> runner;
  std::size_t first_unit = 0;

 private:
  FusionDecoderConfig config_;
  torch::nn::ModuleList layers_;
};
TORCH_MODULE(FusionDecoder);

}  // namespace ft_models
