// torchtune's CLIPImageTransform, the image half of llama3_2_vision_transform: pixels scaled to
// [0, 1] in the transform's dtype, resized without distortion onto the best-fitting canvas of
// whole tiles (bilinear with antialiasing: ATen's _upsample_bilinear2d_aa in float32, as
// torchvision's resize does for a bfloat16 image), padded with zeros at the right and bottom,
// normalised with the model's mean and std, and cut into tiles row by row.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "tile_canvas.h"

namespace ft_images {

struct TiledImageSettings {
  std::int64_t tile_size = 224;
  // Used when possible_canvases is empty: every canvas of at most this many tiles.
  std::int64_t max_num_tiles = 4;
  std::vector<PixelSize> possible_canvases;
  bool resize_to_max_canvas = false;
  // Both empty (no normalisation) or one value per channel.
  std::vector<double> mean;
  std::vector<double> std;
  at::ScalarType dtype = at::kBFloat16;
};

struct TiledImage {
  at::Tensor tiles;        // [tiles, 3, tile_size, tile_size], in the settings' dtype
  PixelSize aspect_ratio;  // the canvas in tiles: height x width
};

// torchvision's ToDtype(dtype, scale=True) and Normalize(mean, std) (none when both are empty) of
// uint8 pixels [height, width, 3], as TiledImageTransform scales and normalises: [3, height,
// width] in `dtype`.
at::Tensor scaled_and_normalized(const at::Tensor& rgb, at::ScalarType dtype, const std::vector<double>& mean,
                                 const std::vector<double>& std);

class TiledImageTransform {
 public:
  explicit TiledImageTransform(TiledImageSettings settings);

  // `rgb`: uint8 [height, width, 3], as decode_image gives.
  TiledImage operator()(const at::Tensor& rgb) const;

  const std::vector<PixelSize>& canvases() const { return canvases_; }

 private:
  TiledImageSettings settings_;
  std::vector<PixelSize> canvases_;
};

}  // namespace ft_images
