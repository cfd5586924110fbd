// Which text tokens see which image, for a decoder with cross-attention to an image encoder
// (Llama 3.2 Vision): torchtune's VisionCrossAttentionMask. Each image token opens an interval
// that runs to the next image token or the end of the text; consecutive image tokens share the
// text after the last of them. An image's mask is [text tokens, its tiles x (patches + 1)] (the
// +1: each tile's CLS token), true on its interval's rows.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ft_images {

struct TokenInterval {
  std::int64_t begin = 0;  // the image token's position
  std::int64_t end = 0;    // exclusive
};

std::vector<TokenInterval> image_attention_intervals(const std::vector<std::int64_t>& tokens,
                                                     std::int64_t image_token_id);

// One bool mask per image, in order. `tiles_per_image[i]`: image i's tile count. Throws ft::Error
// naming `sample` when the text's image tokens and the images differ in number.
std::vector<at::Tensor> vision_cross_attention_masks(const std::vector<std::int64_t>& tokens,
                                                     std::int64_t image_token_id,
                                                     const std::vector<std::int64_t>& tiles_per_image,
                                                     std::int64_t patches_per_tile, const std::string& sample);

}  // namespace ft_images
