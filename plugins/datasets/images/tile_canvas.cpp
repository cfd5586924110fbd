#include "tile_canvas.h"

#include <ft/errors.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <utility>

namespace ft_images {

std::vector<PixelSize> supported_canvases(std::int64_t max_num_tiles, std::int64_t tile_size) {
  if (max_num_tiles < 1 || tile_size < 1)
    throw ft::Error("tiled images need max_num_tiles >= 1 and tile_size >= 1 (got " + std::to_string(max_num_tiles) +
                    " and " + std::to_string(tile_size) + ")");
  // torchtune keys a dict by height / width as a Python float; its iteration order is the order
  // each ratio first appears.
  std::vector<std::pair<double, std::vector<PixelSize>>> by_ratio;
  for (std::int64_t tiles = max_num_tiles; tiles >= 1; --tiles) {
    std::set<std::int64_t> factors;
    for (std::int64_t i = 1; i * i <= tiles; ++i) {
      if (tiles % i == 0) {
        factors.insert(i);
        factors.insert(tiles / i);
      }
    }
    for (const std::int64_t height : factors) {
      const std::int64_t width = tiles / height;
      const double ratio = static_cast<double>(height) / static_cast<double>(width);
      auto group = std::find_if(by_ratio.begin(), by_ratio.end(), [&](const auto& g) { return g.first == ratio; });
      if (group == by_ratio.end()) group = by_ratio.insert(by_ratio.end(), {ratio, {}});
      group->second.push_back({height, width});
    }
  }
  std::vector<PixelSize> canvases;
  for (const auto& group : by_ratio)
    for (const PixelSize& tiles : group.second) canvases.push_back({tiles.height * tile_size, tiles.width * tile_size});
  return canvases;
}

PixelSize best_fit_canvas(PixelSize image, const std::vector<PixelSize>& canvases, bool resize_to_max_canvas) {
  if (canvases.empty()) throw ft::Error("tiled images: no canvas to fit the image onto");
  if (image.height < 1 || image.width < 1)
    throw ft::Error("tiled images: an image of " + std::to_string(image.height) + " x " + std::to_string(image.width) +
                    " pixels");
  // torchtune divides int64 tensors by Python ints: float32 true division.
  std::vector<float> scales;
  for (const PixelSize& canvas : canvases) {
    const float scale_w = static_cast<float>(canvas.width) / static_cast<float>(image.width);
    const float scale_h = static_cast<float>(canvas.height) / static_cast<float>(image.height);
    scales.push_back(scale_w > scale_h ? scale_h : scale_w);
  }
  bool any_upscale = false;
  float selected = 0.0f;
  for (const float scale : scales) {
    if (scale < 1.0f) continue;
    if (!any_upscale || (resize_to_max_canvas ? scale > selected : scale < selected)) selected = scale;
    any_upscale = true;
  }
  if (!any_upscale) {
    selected = *std::max_element(scales.begin(), scales.end());
  }
  const PixelSize* best = nullptr;
  for (std::size_t i = 0; i < canvases.size(); ++i) {
    if (scales[i] != selected) continue;
    // argmin over the areas: the first of equal areas.
    if (!best || canvases[i].height * canvases[i].width < best->height * best->width) best = &canvases[i];
  }
  return *best;
}

PixelSize size_without_distortion(PixelSize image, PixelSize target) {
  const double scale_w = static_cast<double>(target.width) / static_cast<double>(image.width);
  const double scale_h = static_cast<double>(target.height) / static_cast<double>(image.height);
  if (scale_w < scale_h) {
    const auto height = static_cast<std::int64_t>(std::floor(static_cast<double>(image.height) * scale_w));
    return {std::min(height, target.height), target.width};
  }
  const auto width = static_cast<std::int64_t>(std::floor(static_cast<double>(image.width) * scale_h));
  return {target.height, std::min(width, target.width)};
}

PixelSize resized_size_on_canvas(PixelSize image, PixelSize canvas, std::int64_t max_size) {
  PixelSize target = canvas;
  if (max_size > 0) {
    target.height = std::min(std::max(image.height, max_size), canvas.height);
    target.width = std::min(std::max(image.width, max_size), canvas.width);
  }
  return size_without_distortion(image, target);
}

}  // namespace ft_images
