#include "multimodal_sft_dataset.h"

#include <ft/errors.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "image_decoding.h"
#include "message_transforms.h"
#include "sft_dataset.h"
#include "vision_cross_attention_mask.h"

namespace ft_ds {

MultimodalSftDataset::MultimodalSftDataset(std::unique_ptr<RecordSource> records,
                                           std::unique_ptr<MultimodalMessageTransform> transform,
                                           std::shared_ptr<const ft::Tokenizer> tokenizer)
    : records_(std::move(records)),
      transform_(std::move(transform)),
      tokenizer_(std::move(tokenizer)),
      images_(tokenizer_->image_transform()) {
  if (!images_)
    throw ft::Error(
        "the tokenizer takes no images: a multimodal dataset needs the model's transform as [tokenizer], e.g.\n"
        "  [tokenizer]\n  _component_ = \"torchtune.models.llama3_2_vision.llama3_2_vision_transform\"\n"
        "  path = \"/path/to/tokenizer.model\"");
  // A bad record should fail before training starts, not at its first draw.
  if (records_->size() > 0) get(0);
}

namespace {

// The image's tokens in place of its placeholder (Llama 4): the rendering with the k-th placeholder
// replaced by image k's tokens, each taking the placeholder's mask; then torchtune's truncation of
// the expanded sequence (Llama4Tokenizer truncates what it rendered with the tile grids in): at
// most max_seq_len tokens, the last one EOS and masked. Images whose tokens lie wholly past the
// cut are dropped with their tiles; an image the cut splits is an error.
//
// The tokenizer truncated the placeholders' rendering already, which comes to the same: a
// placeholder stands for at least one token, so the expanded sequence's first max_seq_len - 1
// tokens come from the placeholders' first max_seq_len - 1, which its truncation keeps.
ft::Sample expand_in_place(ft::TokenizedMessages rendered, std::vector<ft::SampleImage> images,
                           const std::vector<ImageSource>& sources, const ft::ImageTransform& transform,
                           std::int64_t max_seq_len, std::int64_t eos, const std::string& sample) {
  const std::int64_t placeholder = transform.image_token_id();
  ft::TokenizedMessages out;
  out.truncated = rendered.truncated;
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // each image's tokens [begin, end)
  for (std::size_t i = 0; i < rendered.tokens.size(); ++i) {
    if (rendered.tokens[i] != placeholder) {
      out.tokens.push_back(rendered.tokens[i]);
      out.mask.push_back(rendered.mask[i]);
      continue;
    }
    if (spans.size() == images.size())
      throw ft::Error(sample + ": the text has more image tokens than the record's " + std::to_string(images.size()) +
                      " image(s)");
    const std::vector<std::int64_t> tokens = transform.image_tokens(images[spans.size()]);
    spans.emplace_back(out.tokens.size(), out.tokens.size() + tokens.size());
    out.tokens.insert(out.tokens.end(), tokens.begin(), tokens.end());
    out.mask.insert(out.mask.end(), tokens.size(), rendered.mask[i]);
  }
  // Placeholders the tokenizer's truncation dropped: their images lie past the cut.
  if (!rendered.truncated && spans.size() != images.size())
    throw ft::Error(sample + ": the text has " + std::to_string(spans.size()) + " image tokens for the record's " +
                    std::to_string(images.size()) + " image(s)");
  std::size_t kept = spans.size();
  if (max_seq_len > 0 && static_cast<std::int64_t>(out.tokens.size()) > max_seq_len) {
    const auto cut = static_cast<std::size_t>(max_seq_len - 1);  // tokens kept before the EOS
    for (std::size_t k = 0; k < spans.size(); ++k) {
      if (spans[k].second <= cut) continue;
      if (spans[k].first < cut)
        throw ft::Error(sample + ": max_seq_len " + std::to_string(max_seq_len) + " cuts image " + std::to_string(k) +
                        " (" + sources[k].name + "), whose " + std::to_string(spans[k].second - spans[k].first) +
                        " tokens take positions " + std::to_string(spans[k].first) + "-" +
                        std::to_string(spans[k].second - 1) + "; raise max_seq_len or shorten the sample");
      kept = std::min(kept, k);
    }
    out.tokens.resize(cut);
    out.mask.resize(cut);
    out.tokens.push_back(eos);
    out.mask.push_back(true);
    out.truncated = true;
  }
  images.resize(kept);
  ft::Sample s = sample_of(std::move(out));
  s.images = std::move(images);
  return s;
}

}  // namespace

ft::Sample MultimodalSftDataset::get(std::size_t index) const {
  if (index >= records_->size())
    throw ft::Error("sample index " + std::to_string(index) + " out of range (" + std::to_string(records_->size()) +
                    " records)");
  MultimodalRecord record = (*transform_)(records_->record(index), index);
  validate_messages(record.messages, index);
  ft::TokenizedMessages rendered = tokenizer_->tokenize_messages(record.messages, true);
  if (record.images.empty()) return sample_of(std::move(rendered));

  const std::string sample = "sample " + std::to_string(index);
  std::vector<ft::SampleImage> images;
  for (const ImageSource& source : record.images) {
    at::Tensor pixels;
    try {
      pixels = source.path.empty()
                   ? ft_images::decode_image(
                         std::string_view(reinterpret_cast<const char*>(source.bytes.data()), source.bytes.size()),
                         source.name, source.orientation)
                   : ft_images::read_image_file(source.path, source.orientation);
    } catch (const ft::Error& e) {
      throw ft::Error(sample + ": " + e.what());
    }
    images.push_back(images_->transform(pixels, sample + " (" + source.name + ")"));
  }
  if (!images_->cross_attends())
    return expand_in_place(std::move(rendered), std::move(images), record.images, *images_, tokenizer_->max_seq_len(),
                           tokenizer_->eos_id(), sample);

  ft::Sample s = sample_of(std::move(rendered));
  s.images = std::move(images);
  std::vector<std::int64_t> tiles;
  for (const ft::SampleImage& image : s.images) tiles.push_back(image.tiles.size(0));
  const auto masks = ft_images::vision_cross_attention_masks(s.tokens, images_->image_token_id(), tiles,
                                                             images_->tokens_per_tile() - 1, sample);
  for (std::size_t i = 0; i < masks.size(); ++i) s.images[i].encoder_mask = masks[i];
  return s;
}

}  // namespace ft_ds
