// A model transform that is a text tokenizer and an image transform in one component (torchtune's
// llama3_2_vision_transform and llama4_transform): the text half is the wrapped tokenizer's, the
// derived class adds the image half. Datasets reach it through Tokenizer::image_transform().
#pragma once

#include <ft/errors.h>
#include <ft/image_transform.h>
#include <ft/tokenizer.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tiled_image_transform.h"

namespace ft_tok {

class ImageModelTransform : public ft::Tokenizer, public ft::ImageTransform {
 public:
  explicit ImageModelTransform(std::unique_ptr<ft::Tokenizer> text) : text_(std::move(text)) {}

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

 protected:
  // The image's tiles and canvas as `tiles` cuts them; errors name `source`.
  static ft::SampleImage tiled(const ft_images::TiledImageTransform& tiles, const at::Tensor& pixels,
                               const std::string& source) {
    try {
      ft_images::TiledImage t = tiles(pixels);
      ft::SampleImage image;
      image.tiles = std::move(t.tiles);
      image.rows = t.aspect_ratio.height;
      image.columns = t.aspect_ratio.width;
      return image;
    } catch (const ft::Error& e) {
      throw ft::Error(source + ": " + e.what());
    }
  }

  std::unique_ptr<ft::Tokenizer> text_;
};

}  // namespace ft_tok
