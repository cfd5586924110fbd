// torchtune.data.padded_collate_tiled_images_and_mask: a micro-batch of samples with tiled
// images. Text is padded as padded_collate_sft pads it (right, to a multiple of
// pad_to_multiple_of; or left, tokens only, for generation); every image is padded with zero tiles to the batch's most
// tiles (or pad_max_tiles), every sample with zero images to the batch's most images; aspect ratios are padded with 1;
// each sample's masks are padded with false and laid side by side, image after image, into one [sequence, images x
// tiles x tokens per tile] mask per sample (widened to pad_max_images). Samples whose images come without masks (Llama
// 4, whose model takes the images' features in place of their text tokens) give no mask: encoder_mask is left
// undefined, as torchtune leaves it out of the batch; a batch mixing samples with and without masks is refused.
//
// torchtune stacks each sample's images, so a sample without images stops its collate; here such
// a sample gets only padding images and an all-false mask (docs/parity.md). A batch with no image
// at all is refused: the encoder has nothing to encode.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "tile_canvas.h"

namespace ft_images {

struct TiledImagesSample {
  std::vector<std::int64_t> tokens;
  std::vector<std::int64_t> labels;
  std::vector<at::Tensor> images;        // each [tiles, 3, tile, tile]
  std::vector<PixelSize> aspect_ratios;  // each image's canvas in tiles
  std::vector<at::Tensor> masks;         // vision_cross_attention_masks; empty: the images have none
};

enum class PadDirection { right, left };

struct TiledImagesCollateSettings {
  std::int64_t padding_idx = 0;
  std::int64_t ignore_idx = -100;
  PadDirection pad_direction = PadDirection::right;
  std::optional<std::int64_t> pad_max_tiles;
  std::optional<std::int64_t> pad_max_images;
  // The padded text length is a multiple of this (the tensor-parallel degree); right padding only.
  std::int64_t pad_to_multiple_of = 1;
};

struct TiledImagesBatch {
  at::Tensor tokens;        // int64 [b, s]
  at::Tensor labels;        // int64 [b, s]; undefined when padded left
  at::Tensor images;        // [b, images, tiles, 3, tile, tile]
  at::Tensor aspect_ratio;  // int64 [b, images, 2]
  at::Tensor encoder_mask;  // bool [b, s, images x tiles x tokens per tile]; undefined without masks
};

TiledImagesBatch collate_tiled_images_and_mask(const std::vector<TiledImagesSample>& samples,
                                               const TiledImagesCollateSettings& settings);

}  // namespace ft_images
