#include "vision_language_model.h"

#include "vision_layer_names.h"

#include <ft/errors.h>
#include <ft/nn/attention.h>
#include <ft/nn/hf_parameter_names.h>
#include <ft/text.h>

#include <ATen/ATen.h>

#include <string>
#include <utility>

namespace ft_models {

VisionLanguageModelImpl::VisionLanguageModelImpl(const VisionLanguageConfig& config) : config_(config) {
  if (std::string problem = config.problem(); !problem.empty()) throw ft::Error("Llama 3.2 Vision: " + problem);
  encoder = register_module("encoder", TiledVisionEncoder(config.vision));
  projection =
      register_module("projection", ft::nn::Linear(config.vision.output_dim, config.decoder.text.embed_dim, true));
  decoder = register_module("decoder", FusionDecoder(config.decoder));
}

at::Tensor VisionLanguageModelImpl::encode_images(const VisionLanguageInput& input) const {
  const at::Tensor states = encoder->forward(input.images, input.aspect_ratio_ids, input.tile_mask);
  return projection->forward(states).reshape({states.size(0), -1, config_.decoder.text.embed_dim});
}

at::Tensor VisionLanguageModelImpl::hidden(const VisionLanguageInput& input) const {
  at::Tensor encoder_states;
  if (input.images.defined()) {
    encoder_states = encode_images(input);
    const std::vector<std::int64_t> expected{input.tokens.size(0), input.tokens.size(1), encoder_states.size(1)};
    if (!input.encoder_mask.defined() || input.encoder_mask.sizes() != at::IntArrayRef(expected))
      throw ft::Error("Llama 3.2 Vision: the encoder mask must be [batch, text, images x tiles x tokens] = " +
                      ft::shape_text(expected) + ", got " +
                      (input.encoder_mask.defined() ? ft::shape_text(input.encoder_mask.sizes()) : "none"));
  }
  return decoder->hidden(input.tokens, input.positions, encoder_states,
                         encoder_states.defined() ? input.encoder_mask.to(at::kBool) : at::Tensor());
}

namespace {

using ft::NamedTensor;

void add(std::vector<NamedTensor>& out, std::string name, const at::Tensor& tensor) {
  out.emplace_back(std::move(name), tensor);
}

void encoder_layer_names(std::vector<NamedTensor>& out, const std::string& prefix,
                         ft::nn::TransformerLayerImpl& layer) {
  clip_layer_names(out, prefix, layer);
  if (layer.sa_scale) add(out, prefix + "gate_attn", layer.sa_scale->scale);
  if (layer.mlp_scale) add(out, prefix + "gate_ffn", layer.mlp_scale->scale);
}

void self_attention_layer_names(std::vector<NamedTensor>& out, const std::string& prefix,
                                ft::nn::TransformerLayerImpl& layer) {
  projection_names(out, prefix + "self_attn.", *layer.attn);
  ft::nn::dense_mlp_names(*layer.mlp, prefix, "mlp", false, out);
  add(out, prefix + "input_layernorm.weight", layer.sa_norm->scale);
  add(out, prefix + "post_attention_layernorm.weight", layer.mlp_norm->scale);
}

void cross_attention_layer_names(std::vector<NamedTensor>& out, const std::string& prefix,
                                 ft::nn::CrossAttentionLayerImpl& layer) {
  const auto& attn = *layer.attn;
  projection_names(out, prefix + "cross_attn.", attn);
  add(out, prefix + "cross_attn.q_norm.weight", attn.q_norm->scale);
  add(out, prefix + "cross_attn.k_norm.weight", attn.k_norm->scale);
  add(out, prefix + "cross_attn_attn_gate", layer.ca_scale->scale);
  ft::nn::dense_mlp_names(*layer.mlp, prefix, "mlp", false, out);
  add(out, prefix + "cross_attn_mlp_gate", layer.mlp_scale->scale);
  add(out, prefix + "input_layernorm.weight", layer.ca_norm->scale);
  add(out, prefix + "post_attention_layernorm.weight", layer.mlp_norm->scale);
}

}  // namespace

std::vector<NamedTensor> mllama_hf_parameters(VisionLanguageModelImpl& model) {
  std::vector<NamedTensor> out;
  auto& encoder = *model.encoder;
  const std::string vision = "vision_model.";
  add(out, vision + "patch_embedding.weight", encoder.patch_embedding);
  add(out, vision + "class_embedding", encoder.class_embedding);
  add(out, vision + "gated_positional_embedding.gate", encoder.position_gate);
  add(out, vision + "gated_positional_embedding.embedding", encoder.position_embedding);
  add(out, vision + "gated_positional_embedding.tile_embedding.weight", encoder.tile_position_embedding);
  add(out, vision + "pre_tile_positional_embedding.embedding.weight", encoder.pre_tile_embedding->embedding);
  add(out, vision + "pre_tile_positional_embedding.gate", encoder.pre_tile_embedding->gate);
  add(out, vision + "post_tile_positional_embedding.embedding.weight", encoder.post_tile_embedding->embedding);
  add(out, vision + "post_tile_positional_embedding.gate", encoder.post_tile_embedding->gate);
  layer_norm_names(out, vision + "layernorm_pre", encoder.layernorm_pre);
  layer_norm_names(out, vision + "layernorm_post", encoder.layernorm_post);
  for (std::size_t i = 0; i < encoder.layers.size(); ++i)
    encoder_layer_names(out, vision + "transformer.layers." + std::to_string(i) + ".", *encoder.layers[i]);
  for (std::size_t i = 0; i < encoder.global_layers.size(); ++i)
    encoder_layer_names(out, vision + "global_transformer.layers." + std::to_string(i) + ".",
                        *encoder.global_layers[i]);
  add(out, "multi_modal_projector.weight", model.projection->weight);
  add(out, "multi_modal_projector.bias", model.projection->bias);

  auto& decoder = *model.decoder;
  const std::string text = "language_model.model.";
  out.emplace_back(text + "embed_tokens.weight", at::Tensor(),
                   std::vector<at::Tensor>{decoder.tok_embeddings, decoder.fusion_embeddings}, 0);
  std::size_t next_self = 0, next_cross = 0;
  for (std::int64_t i = 0; i < decoder.config().total_layers(); ++i) {
    const std::string prefix = text + "layers." + std::to_string(i) + ".";
    if (decoder.config().is_cross_attention_layer(i)) {
      cross_attention_layer_names(out, prefix, *decoder.cross_attention_layers[next_cross++]);
    } else {
      self_attention_layer_names(out, prefix, *decoder.self_attention_layers[next_self++]);
    }
  }
  add(out, text + "norm.weight", decoder.norm->scale);
  add(out, "language_model.lm_head.weight", decoder.output);
  return out;
}

}  // namespace ft_models
