// Hugging Face's names of the tensors of CLIP-style vision encoder layers, which Mllama's and
// Llama 4's checkpoints share: q/k/v/o projections (with their biases where the layer has them),
// the fc1 / fc2 MLP, and LayerNorms' weight and bias.
#pragma once

#include <ft/model.h>
#include <ft/nn/norm.h>
#include <ft/nn/transformer_layer.h>

#include <string>
#include <vector>

namespace ft_models {

// {prefix}.weight and {prefix}.bias of a LayerNorm.
void layer_norm_names(std::vector<ft::NamedTensor>& out, const std::string& prefix, const ft::nn::Norm& norm);

// {prefix}{q,k,v,o}_proj.weight (and .bias where defined) of self- or cross-attention.
template <class Attention>
void projection_names(std::vector<ft::NamedTensor>& out, const std::string& prefix, const Attention& attn) {
  const auto add = [&](const std::string& name, const auto& linear) {
    out.emplace_back(prefix + name + ".weight", linear->weight);
    if (linear->bias.defined()) out.emplace_back(prefix + name + ".bias", linear->bias);
  };
  add("q_proj", attn.q_proj);
  add("k_proj", attn.k_proj);
  add("v_proj", attn.v_proj);
  add("o_proj", attn.output_proj);
}

// A CLIP-style layer (self-attention, the CLIP MLP, two LayerNorms) under `prefix`:
// self_attn.*, mlp.fc1.*, mlp.fc2.*, input_layernorm.*, post_attention_layernorm.*.
void clip_layer_names(std::vector<ft::NamedTensor>& out, const std::string& prefix,
                      ft::nn::TransformerLayerImpl& layer);

}  // namespace ft_models
