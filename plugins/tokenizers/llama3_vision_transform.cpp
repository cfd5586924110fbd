// torchtune's llama3_2_vision_transform (Llama3VisionTransform): the Llama 3 tokenizer, whose
// <|image|> token stands for each image, and CLIPImageTransform's tiles of tile_size pixels, at
// most 4 per image, normalised with CLIP's mean and std, in bfloat16 as torchtune makes them.
// One component: datasets reach the image half through Tokenizer::image_transform().
#include <ft/errors.h>
#include <ft/image_transform.h>

#include <memory>
#include <string>
#include <utility>

#include "tiled_image_transform.h"
#include "tokenizer_factories.h"

namespace ft_tok {
namespace {

class Llama3VisionTransform final : public ft::Tokenizer, public ft::ImageTransform {
 public:
  Llama3VisionTransform(std::unique_ptr<ft::Tokenizer> text, std::int64_t tile_size)
      : text_(std::move(text)), tiles_(settings(tile_size)), tile_size_(tile_size) {
    const auto image = text_->special_token("<|image|>");
    if (!image) throw ft::Error("the tokenizer has no <|image|> token, which Llama 3.2 Vision's transform needs");
    image_token_ = *image;
  }

  // The text half, as the Llama 3 tokenizer does it.
  std::vector<std::int64_t> encode(std::string_view text, bool add_bos, bool add_eos) const override {
    return text_->encode(text, add_bos, add_eos);
  }
  std::string decode(const std::vector<std::int64_t>& ids) const override { return text_->decode(ids); }
  std::int64_t vocab_size() const override { return text_->vocab_size(); }
  std::int64_t bos_id() const override { return text_->bos_id(); }
  std::int64_t eos_id() const override { return text_->eos_id(); }
  std::int64_t pad_id() const override { return text_->pad_id(); }
  std::optional<std::int64_t> special_token(std::string_view text) const override { return text_->special_token(text); }
  std::int64_t max_seq_len() const override { return text_->max_seq_len(); }
  ft::TokenizedMessages tokenize_messages(const std::vector<ft::Message>& messages,
                                          bool add_end_tokens) const override {
    return text_->tokenize_messages(messages, add_end_tokens);
  }
  std::vector<std::int64_t> stop_tokens() const override { return text_->stop_tokens(); }
  const ft::ImageTransform* image_transform() const override { return this; }

  // The image half.
  ft::SampleImage transform(const at::Tensor& pixels, const std::string& source) const override {
    try {
      ft_images::TiledImage tiled = tiles_(pixels);
      ft::SampleImage image;
      image.tiles = std::move(tiled.tiles);
      image.rows = tiled.aspect_ratio.height;
      image.columns = tiled.aspect_ratio.width;
      return image;
    } catch (const ft::Error& e) {
      throw ft::Error(source + ": " + e.what());
    }
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

  std::unique_ptr<ft::Tokenizer> text_;
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
