// The image half of a multimodal model transform (torchtune's llama3_2_vision_transform is a
// tokenizer and an image transform in one component): what a multimodal dataset asks the run's
// tokenizer for (Tokenizer::image_transform) to turn decoded pixels into the model's tiles.
#pragma once

#include <ft/sample.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace ft {

class ImageTransform {
 public:
  virtual ~ImageTransform() = default;
  // RGB pixels [height, width, 3] uint8 -> the image's tiles and canvas (encoder_mask is left for
  // the dataset, which knows the text). `source` names the image in errors.
  virtual SampleImage transform(const at::Tensor& pixels, const std::string& source) const = 0;
  // The text token standing for one image (Llama 3's <|image|>).
  virtual std::int64_t image_token_id() const = 0;
  // The image tokens the encoder makes of one tile (patches and the class token): the width of a
  // tile in the text-to-image masks.
  virtual std::int64_t tokens_per_tile() const = 0;
};

}  // namespace ft
