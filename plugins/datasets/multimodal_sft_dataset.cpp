#include "multimodal_sft_dataset.h"

#include <ft/errors.h>

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

ft::Sample MultimodalSftDataset::get(std::size_t index) const {
  if (index >= records_->size())
    throw ft::Error("sample index " + std::to_string(index) + " out of range (" + std::to_string(records_->size()) +
                    " records)");
  MultimodalRecord record = (*transform_)(records_->record(index), index);
  validate_messages(record.messages, index);
  ft::Sample s = sample_of(tokenizer_->tokenize_messages(record.messages, true));
  if (record.images.empty()) return s;

  const std::string sample = "sample " + std::to_string(index);
  std::vector<std::int64_t> tiles;
  for (const ImageSource& source : record.images) {
    at::Tensor pixels;
    try {
      pixels = source.path.empty()
                   ? ft_images::decode_image(
                         std::string_view(reinterpret_cast<const char*>(source.bytes.data()), source.bytes.size()),
                         source.name)
                   : ft_images::read_image_file(source.path);
    } catch (const ft::Error& e) {
      throw ft::Error(sample + ": " + e.what());
    }
    s.images.push_back(images_->transform(pixels, sample + " (" + source.name + ")"));
    tiles.push_back(s.images.back().tiles.size(0));
  }
  const auto masks = ft_images::vision_cross_attention_masks(s.tokens, images_->image_token_id(), tiles,
                                                             images_->tokens_per_tile() - 1, sample);
  for (std::size_t i = 0; i < masks.size(); ++i) s.images[i].encoder_mask = masks[i];
  return s;
}

}  // namespace ft_ds
