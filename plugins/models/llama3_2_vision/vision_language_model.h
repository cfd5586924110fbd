// Llama 3.2 Vision as one module (Hugging Face's MllamaForConditionalGeneration): the tiled image
// encoder, the projector from its output to the text's width, and the fusion decoder; with the
// names its published checkpoints give each tensor.
#pragma once

#include "fusion_decoder.h"
#include "tiled_vision_encoder.h"
#include "vision_language_config.h"

#include <ft/model.h>
#include <ft/nn/linear.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <vector>

namespace ft_models {

struct VisionLanguageInput {
  at::Tensor tokens;     // [b, s] int64
  at::Tensor positions;  // [b, s] int64; undefined: 0..s-1
  // The images, as padded_collate_tiled_images_and_mask batches them; undefined for text alone.
  at::Tensor images;            // [b, images, tiles, channels, size, size]
  at::Tensor aspect_ratio_ids;  // [b, images] int64, 0 for a padding image
  at::Tensor tile_mask;         // [b, images, tiles], nonzero for real tiles
  // [b, s, images x tiles x tokens_per_tile] bool: which image tokens each text position sees.
  at::Tensor encoder_mask;
};

class VisionLanguageModelImpl : public torch::nn::Module {
 public:
  explicit VisionLanguageModelImpl(const VisionLanguageConfig& config);
  // The projected image states the decoder attends to, [b, images x tiles x tokens, dim].
  at::Tensor encode_images(const VisionLanguageInput& input) const;
  // The final hidden state [b, s, dim]: the images encoded (when given) and attended to.
  at::Tensor hidden(const VisionLanguageInput& input) const;
  // [b, s, vocab].
  at::Tensor logits(const VisionLanguageInput& input) const { return decoder->logits(hidden(input)); }

  const VisionLanguageConfig& config() const { return config_; }
  TiledVisionEncoder encoder{nullptr};
  ft::nn::Linear projection{nullptr};  // vision_output_dim -> the text's width, with a bias
  FusionDecoder decoder{nullptr};

 private:
  VisionLanguageConfig config_;
};
TORCH_MODULE(VisionLanguageModel);

// Every parameter under the name meta-llama's Llama 3.2 Vision checkpoints give it
// (vision_model.*, multi_modal_projector.*, language_model.model.*, language_model.lm_head.weight),
// each once: the embedding's vocabulary and fusion rows are one tensor there.
std::vector<ft::NamedTensor> mllama_hf_parameters(VisionLanguageModelImpl& model);

}  // namespace ft_models
