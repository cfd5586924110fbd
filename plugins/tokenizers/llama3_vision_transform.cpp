// torchtune's llama3_2_vision_transform (Llama3VisionTransform): the Llama 3 tokenizer, whose
// <|image|> token stands for each image, and CLIPImageTransform's tiles of tile_size pixels, at
// most 4 per image, normalised with CLIP's mean and std, in bfloat16 as torchtune makes them.
// One component: datasets reach the image half through Tokenizer::image_transform().
#include <ft/errors.h>
#include <ft/image_transform.h>

#include <memory>
#include <string>
#include <utility>

#include "image_model_transform.h"
#include "tiled_image_transform.h"
#include "tokenizer_factories.h"

namespace ft_tok {
namespace {

class Llama3VisionTransform final : public ImageModelTransform {
 public:
  Llama3VisionTransform(std::unique_ptr<ft::Tokenizer> text, std::int64_t tile_size)
      : ImageModelTransform(std::move(text)), tiles_(settings(tile_size)), tile_size_(tile_size) {
    const auto image = text_->special_token("<|image|>");
    if (!image) throw ft::Error("the tokenizer has no <|image|> token, which Llama 3.2 Vision's transform needs");
    image_token_ = *image;
  }

  // The image half.
  ft::SampleImage transform(const at::Tensor& pixels, const std::string& source) const override {
    return tiled(tiles_, pixels, source);
  }
  std::int64_t image_token_id() const override { return image_token_; }
  // torchtune's VisionCrossAttentionMask with patch_size 14: (tile / 14)^2 patches and the CLS token.
  std::int64_t tokens_per_tile() const override { return (tile_size_ / kPatchSize) * (tile_size_ / kPatchSize) + 1; }

 private:
  static constexpr std::int64_t kPatchSize = 14;
  static ft_images::TiledImageSettings settings(std::int64_t tile_size) {
    ft_images::TiledImageSettings s;
    s.tile_size = tile_size;
    s.max_num_tiles = 4;
    s.mean = {0.48145466, 0.4578275, 0.40821073};
    s.std = {0.26862954, 0.26130258, 0.27577711};
    s.dtype = at::kBFloat16;
    return s;
  }

  ft_images::TiledImageTransform tiles_;
  std::int64_t tile_size_;
  std::int64_t image_token_ = 0;
};

}  // namespace

std::unique_ptr<ft::Tokenizer> make_llama3_vision_transform(std::unique_ptr<ft::Tokenizer> text,
                                                            std::int64_t image_size) {
  if (image_size <= 0 || image_size % 14 != 0)
    throw ft::Error("image_size must be a positive multiple of the patch size 14, got " + std::to_string(image_size));
  return std::make_unique<Llama3VisionTransform>(std::move(text), image_size);
}

}  // namespace ft_tok
