#include "vision_layer_names.h"

#include <ft/nn/attention.h>
#include <ft/nn/clip_mlp.h>
#include <ft/nn/layer_norm.h>

namespace ft_models {

void layer_norm_names(std::vector<ft::NamedTensor>& out, const std::string& prefix, const ft::nn::Norm& norm) {
  out.emplace_back(prefix + ".weight", norm->scale);
  out.emplace_back(prefix + ".bias", dynamic_cast<const ft::nn::LayerNormImpl&>(*norm).bias);
}

void clip_layer_names(std::vector<ft::NamedTensor>& out, const std::string& prefix,
                      ft::nn::TransformerLayerImpl& layer) {
  projection_names(out, prefix + "self_attn.", *layer.attn);
  const auto& mlp = dynamic_cast<const ft::nn::ClipMlpImpl&>(*layer.mlp);
  out.emplace_back(prefix + "mlp.fc1.weight", mlp.w1->weight);
  out.emplace_back(prefix + "mlp.fc1.bias", mlp.w1->bias);
  out.emplace_back(prefix + "mlp.fc2.weight", mlp.w2->weight);
  out.emplace_back(prefix + "mlp.fc2.bias", mlp.w2->bias);
  layer_norm_names(out, prefix + "input_layernorm", layer.sa_norm);
  layer_norm_names(out, prefix + "post_attention_layernorm", layer.mlp_norm);
}

}  // namespace ft_models
