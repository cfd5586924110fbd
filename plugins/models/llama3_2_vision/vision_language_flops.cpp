#include "vision_language_flops.h"

#include "matrix_elements.h"

#include <ft/errors.h>

#include <vector>

namespace ft_models {

VisionLanguageFlops::VisionLanguageFlops(const VisionLanguageModelImpl& model)
    : max_num_tiles_(model.config().vision.max_num_tiles), tokens_per_tile_(model.config().vision.tokens_per_tile()) {
  const FusionDecoderImpl& decoder = *model.decoder;
  for (const auto& layer : decoder.self_attention_layers) {
    position_weights_ += matrix_elements(layer->parameters());
    self_attention_width_ += static_cast<double>(layer->attn->q_proj->weight.size(0));
  }
  for (const auto& layer : decoder.cross_attention_layers) {
    const ft::nn::CrossAttentionImpl& attention = *layer->attn;
    position_weights_ += matrix_elements(attention.q_proj->parameters()) +
                         matrix_elements(attention.output_proj->parameters()) +
                         matrix_elements(layer->mlp->parameters());
    image_state_weights_ +=
        matrix_elements(attention.k_proj->parameters()) + matrix_elements(attention.v_proj->parameters());
    cross_attention_width_ += static_cast<double>(attention.q_proj->weight.size(0));
  }
  position_weights_ += static_cast<double>(decoder.output.numel());
  image_state_weights_ += matrix_elements(model.projection->parameters());
  const TiledVisionEncoderImpl& encoder = *model.encoder;
  patch_weights_ = static_cast<double>(encoder.patch_embedding.numel());
  for (const auto* stack : {&encoder.layers, &encoder.global_layers})
    for (const auto& layer : *stack) {
      vision_layer_weights_ += matrix_elements(layer->parameters());
      vision_attention_width_ += static_cast<double>(layer->attn->q_proj->weight.size(0));
    }
}

double VisionLanguageFlops::per_position(std::int64_t seq_len) const {
  return 6 * position_weights_ + 12 * self_attention_width_ * static_cast<double>(seq_len);
}

double VisionLanguageFlops::of_images(const ft::BatchImages& images) const {
  if (images.images.dim() != 6 || !images.encoder_mask.defined() || images.encoder_mask.dim() != 3)
    throw ft::Error("Llama 3.2 Vision FLOPs: images [batch, images, tiles, ...] with a [batch, text, states] mask");
  const auto encoded_images = static_cast<double>(images.images.size(0) * images.images.size(1));
  const auto patches = static_cast<double>(max_num_tiles_ * (tokens_per_tile_ - 1));
  const auto image_tokens = static_cast<double>(max_num_tiles_ * ((tokens_per_tile_ + 7) / 8 * 8));
  const double encoder = 6 * (patches * patch_weights_ + image_tokens * vision_layer_weights_) +
                         12 * vision_attention_width_ * image_tokens * image_tokens;
  const auto rows = static_cast<double>(images.encoder_mask.size(0));
  const auto text = static_cast<double>(images.encoder_mask.size(1));
  const auto states = static_cast<double>(images.encoder_mask.size(2));
  return encoded_images * encoder + rows * states * 6 * image_state_weights_ +
         rows * 12 * cross_attention_width_ * text * states;
}

}  // namespace ft_models
