// torchtune's llama4_transform (Llama4Transform) with images: the Llama 4 tokenizer, whose
// <|image|> placeholder stands for each image until the dataset replaces it by the image's tile
// grid (Llama4Tokenizer._get_tile_grid_tokens), and CLIPImageTransform's tiles of image_size
// pixels, at most max_num_tiles per image, normalised with mean = std = 0.5, in bfloat16; an image
// of several tiles gets a global thumbnail as its last tile: the whole image resized to one tile
// (torchvision's Resize of the PIL image: Pillow's bilinear resize), scaled and normalised alike.
// The model takes each image's features in place of its <|patch|> tokens: no cross-attention.
#include <ft/errors.h>
#include <ft/image_transform.h>

#include <ATen/ops/cat.h>

#include <memory>
#include <string>
#include <utility>

#include "image_model_transform.h"
#include "pil_resize.h"
#include "tiled_image_transform.h"
#include "tokenizer_factories.h"

namespace ft_tok {
namespace {

const std::vector<double> kHalf = {0.5, 0.5, 0.5};

class Llama4Transform final : public ImageModelTransform {
 public:
  Llama4Transform(std::unique_ptr<ft::Tokenizer> text, std::int64_t tile_size, std::int64_t max_num_tiles)
      : ImageModelTransform(std::move(text)), tiles_(settings(tile_size, max_num_tiles)), tile_size_(tile_size) {
    // torchtune: (tile_size // patch_size)^2 patches, pixel shuffle 0.5 keeps a quarter of them.
    const std::int64_t grid = tile_size / kPatchSize;
    patch_tokens_per_tile_ = grid * grid / 4;
  }

  // The image half: the canvas's tiles row by row, then the thumbnail when there are several.
  ft::SampleImage transform(const at::Tensor& pixels, const std::string& source) const override {
    ft::SampleImage image = tiled(tiles_, pixels, source);
    if (image.tiles.size(0) > 1) {
      const at::Tensor thumbnail = ft_images::scaled_and_normalized(
          ft_images::pil_resize_bilinear(pixels, tile_size_, tile_size_), at::kBFloat16, kHalf, kHalf);
      image.tiles = at::cat({image.tiles, thumbnail.unsqueeze(0)}, 0);
    }
    return image;
  }
  std::int64_t image_token_id() const override { return token("<|image|>"); }
  // The text positions of one tile: its patch tokens after pixel shuffle.
  std::int64_t tokens_per_tile() const override { return patch_tokens_per_tile_; }
  // <|image_start|>, for a canvas of several tiles each row's tiles' <|patch|> runs joined by
  // <|tile_x_separator|> and ended by <|tile_y_separator|>, then <|image|> and the thumbnail's (or
  // the only tile's) <|patch|> run, <|image_end|>.
  std::vector<std::int64_t> image_tokens(const ft::SampleImage& image) const override {
    const std::int64_t patch = token("<|patch|>");
    std::vector<std::int64_t> out{token("<|image_start|>")};
    if (image.rows != 1 || image.columns != 1) {
      for (std::int64_t r = 0; r < image.rows; ++r) {
        for (std::int64_t c = 0; c < image.columns; ++c) {
          out.insert(out.end(), static_cast<std::size_t>(patch_tokens_per_tile_), patch);
          if (c + 1 < image.columns) out.push_back(token("<|tile_x_separator|>"));
        }
        out.push_back(token("<|tile_y_separator|>"));
      }
    }
    out.push_back(token("<|image|>"));
    out.insert(out.end(), static_cast<std::size_t>(patch_tokens_per_tile_), patch);
    out.push_back(token("<|image_end|>"));
    return out;
  }
  bool cross_attends() const override { return false; }

 private:
  static constexpr std::int64_t kPatchSize = 14;
  static ft_images::TiledImageSettings settings(std::int64_t tile_size, std::int64_t max_num_tiles) {
    ft_images::TiledImageSettings s;
    s.tile_size = tile_size;
    s.max_num_tiles = max_num_tiles;
    s.resize_to_max_canvas = false;
    s.mean = kHalf;
    s.std = kHalf;
    s.dtype = at::kBFloat16;
    return s;
  }
  // An image special token (a special_tokens_path may lack one: only images need them).
  std::int64_t token(const char* name) const {
    if (auto id = text_->special_token(name)) return *id;
    throw ft::Error(std::string("the tokenizer has no ") + name + " token, which Llama 4's images need");
  }

  ft_images::TiledImageTransform tiles_;
  std::int64_t tile_size_;
  std::int64_t patch_tokens_per_tile_ = 0;
};

}  // namespace

std::unique_ptr<ft::Tokenizer> make_llama4_transform(std::unique_ptr<ft::Tokenizer> text, std::int64_t image_size,
                                                     std::int64_t max_num_tiles) {
  if (image_size <= 0 || image_size % 14 != 0)
    throw ft::Error("image_size must be a positive multiple of the patch size 14, got " + std::to_string(image_size));
  if (max_num_tiles <= 0) throw ft::Error("max_num_tiles must be positive, got " + std::to_string(max_num_tiles));
  return std::make_unique<Llama4Transform>(std::move(text), image_size, max_num_tiles);
}

}  // namespace ft_tok
