// Pillow's Image.resize with the bilinear filter on an 8-bit RGB image, bit for bit: what
// torchvision's Resize does to a PIL image (torchtune's Llama 4 thumbnail resizes the PIL image
// the dataset loaded). Two separable passes, horizontal then vertical, each with Pillow's
// triangle filter widened by the downscaling factor (antialiasing), its weights in 22-bit fixed
// point and each pass rounded to 8 bits.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace ft_images {

// `rgb`: uint8 [height, width, 3] -> uint8 [out_height, out_width, 3].
at::Tensor pil_resize_bilinear(const at::Tensor& rgb, std::int64_t out_height, std::int64_t out_width);

}  // namespace ft_images
