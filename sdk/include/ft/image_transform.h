// The image half of a multimodal model transform (torchtune's llama3_2_vision_transform and
// llama4_transform are a tokenizer and an image transform in one component): what a multimodal
// dataset asks the run's tokenizer for (Tokenizer::image_transform) to turn decoded pixels into
// the model's tiles, and each image's placeholder token in the text into the image's tokens.
#pragma once

#include <ft/sample.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ft {

class ImageTransform {
 public:
  virtual ~ImageTransform() = default;
  // RGB pixels [height, width, 3] uint8 -> the image's tiles and canvas (encoder_mask is left for
  // the dataset, which knows the text). `source` names the image in errors.
  virtual SampleImage transform(const at::Tensor& pixels, const std::string& source) const = 0;
  // The placeholder token the tokenizer writes where an image sits in a message (Llama 3's and
  // Llama 4's <|image|>).
  virtual std::int64_t image_token_id() const = 0;
  // Cross-attention (cross_attends()): the image tokens the encoder makes of one tile (patches
  // and the class token), the width of a tile in the text-to-image masks. In place: the text
  // positions one tile's features fill.
  virtual std::int64_t tokens_per_tile() const = 0;

  // Added with Llama 4 (appended, so existing vtable slots keep their places).
  //
  // The tokens standing for `image` in the text, which replace its placeholder. Llama 3.2 Vision:
  // its one image token, the text attending to the image's tokens through encoder_mask. Llama 4:
  // the tile grid, whose <|patch|> positions the model fills with the image's features in order
  // (no encoder_mask).
  virtual std::vector<std::int64_t> image_tokens(const SampleImage& /*image*/) const { return {image_token_id()}; }
  // Whether the model attends to the image through cross-attention (encoder_mask) rather than
  // taking its features in place of the text's patch tokens.
  virtual bool cross_attends() const { return true; }
};

}  // namespace ft
