// Where a tiled vision encoder's image goes: the canvases (whole numbers of tiles) an image may be
// resized onto, the one it fits best, and its size on that canvas without distortion; torchtune's
// find_supported_resolutions, get_canvas_best_fit and resize_with_pad's sizing, with their
// arithmetic (float32 scales for the choice, double for the size) and their tie-breaking.
#pragma once

#include <cstdint>
#include <vector>

namespace ft_images {

struct PixelSize {
  std::int64_t height = 0;
  std::int64_t width = 0;
  bool operator==(const PixelSize& other) const { return height == other.height && width == other.width; }
};

// Every height x width of at most max_num_tiles tiles, in torchtune's order (grouped by aspect
// ratio, in the order the ratios first appear counting tiles down from max_num_tiles).
std::vector<PixelSize> supported_canvases(std::int64_t max_num_tiles, std::int64_t tile_size);

// The canvas the image is resized onto: the smallest upscale of those that need none below 1
// (the largest with resize_to_max_canvas), else the mildest downscale; among equal scales the
// smallest area, the first listed of equal areas.
PixelSize best_fit_canvas(PixelSize image, const std::vector<PixelSize>& canvases, bool resize_to_max_canvas);

// The largest size within `target` with the image's aspect ratio (the limiting side exactly,
// the other floored).
PixelSize size_without_distortion(PixelSize image, PixelSize target);

// resize_with_pad's resize size on `canvas`: with max_size (torchtune: the tile size unless
// resize_to_max_canvas), an image is not upscaled past max(its side, max_size) on either side.
PixelSize resized_size_on_canvas(PixelSize image, PixelSize canvas, std::int64_t max_size);

}  // namespace ft_images
