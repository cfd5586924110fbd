#include "tiled_image_transform.h"

#include <ft/errors.h>

#include <ATen/ops/_upsample_bilinear2d_aa.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/tensor.h>

#include <string>
#include <utility>

namespace ft_images {
namespace {

bool reduced_precision(at::ScalarType dtype) { return dtype == at::kBFloat16 || dtype == at::kHalf; }

// torchvision's to_image and to_dtype(scale=True): [3, H, W] over the decoder's [H, W, 3] memory.
// Its to_dtype scales by a Python float, which ATen applies to a bfloat16 tensor in float32
// before rounding; a C++ Scalar would be rounded to bfloat16 first (1/255 -> 0.0039367...),
// moving most pixels by an ulp. So reduced precisions are scaled in float32 (exact for 0..255)
// and rounded once.
at::Tensor scaled(const at::Tensor& rgb, at::ScalarType dtype) {
  const bool reduced = reduced_precision(dtype);
  at::Tensor image = rgb.permute({2, 0, 1}).to(reduced ? at::kFloat : dtype).mul_(1.0 / 255.0);
  return reduced ? image.to(dtype) : image;
}

// torchvision's normalize: (x - mean) / std with mean and std in the image's dtype.
at::Tensor normalized(const at::Tensor& image, at::ScalarType dtype, const std::vector<double>& mean,
                      const std::vector<double>& std) {
  if (mean.empty()) return image;
  const auto as_channels = [&](const std::vector<double>& values) {
    return at::tensor(values, at::TensorOptions().dtype(at::kDouble)).to(dtype).view({-1, 1, 1});
  };
  return image.sub(as_channels(mean)).div_(as_channels(std));
}

void check_pixels(const at::Tensor& rgb) {
  if (rgb.dim() != 3 || rgb.size(2) != 3 || rgb.scalar_type() != at::kByte)
    throw ft::Error("tiled images: expected uint8 pixels [height, width, 3]");
}

}  // namespace

at::Tensor scaled_and_normalized(const at::Tensor& rgb, at::ScalarType dtype, const std::vector<double>& mean,
                                 const std::vector<double>& std) {
  check_pixels(rgb);
  if (mean.size() != std.size() || (!mean.empty() && mean.size() != 3))
    throw ft::Error("tiled images: image_mean and image_std need three values each, or neither given");
  return normalized(scaled(rgb, dtype), dtype, mean, std);
}

TiledImageTransform::TiledImageTransform(TiledImageSettings settings) : settings_(std::move(settings)) {
  if (settings_.tile_size < 1) throw ft::Error("tiled images: tile_size must be at least 1");
  if (settings_.mean.size() != settings_.std.size() || (!settings_.mean.empty() && settings_.mean.size() != 3))
    throw ft::Error("tiled images: image_mean and image_std need three values each, or neither given");
  for (const double s : settings_.std)
    if (s == 0.0) throw ft::Error("tiled images: image_std has a 0, which would divide by zero");
  canvases_ = settings_.possible_canvases.empty() ? supported_canvases(settings_.max_num_tiles, settings_.tile_size)
                                                  : settings_.possible_canvases;
  for (const PixelSize& canvas : canvases_)
    if (canvas.height % settings_.tile_size != 0 || canvas.width % settings_.tile_size != 0)
      throw ft::Error("tiled images: the canvas " + std::to_string(canvas.height) + " x " +
                      std::to_string(canvas.width) + " is not a whole number of " +
                      std::to_string(settings_.tile_size) + "-pixel tiles");
}

TiledImage TiledImageTransform::operator()(const at::Tensor& rgb) const {
  check_pixels(rgb);
  const PixelSize original{rgb.size(0), rgb.size(1)};
  at::Tensor image = scaled(rgb, settings_.dtype);

  const PixelSize canvas = best_fit_canvas(original, canvases_, settings_.resize_to_max_canvas);
  const std::int64_t max_size = settings_.resize_to_max_canvas ? 0 : settings_.tile_size;
  const PixelSize resized = resized_size_on_canvas(original, canvas, max_size);
  if (!(resized == original)) {
    // torchvision's resize_image: a batch of one, float32 for the kernel unless already float.
    at::Tensor batch = image.reshape({1, 3, original.height, original.width});
    const bool cast = settings_.dtype != at::kFloat && settings_.dtype != at::kDouble;
    if (cast) batch = batch.to(at::kFloat);
    batch = at::_upsample_bilinear2d_aa(batch, {resized.height, resized.width}, /*align_corners=*/false, c10::nullopt,
                                        c10::nullopt);
    if (cast) batch = batch.to(settings_.dtype);
    image = batch.reshape({3, resized.height, resized.width});
  }
  if (!(resized == canvas)) {
    // Zeros right and bottom: [left, right, top, bottom].
    image = at::constant_pad_nd(image, {0, canvas.width - resized.width, 0, canvas.height - resized.height}, 0);
  }
  image = normalized(image, settings_.dtype, settings_.mean, settings_.std);
  const std::int64_t tile = settings_.tile_size;
  const std::int64_t tiles_high = canvas.height / tile;
  const std::int64_t tiles_wide = canvas.width / tile;
  at::Tensor tiles = image.reshape({3, tiles_high, tile, tiles_wide, tile})
                         .permute({1, 3, 0, 2, 4})
                         .contiguous()
                         .view({tiles_high * tiles_wide, 3, tile, tile});
  return {tiles, {tiles_high, tiles_wide}};
}

}  // namespace ft_images
