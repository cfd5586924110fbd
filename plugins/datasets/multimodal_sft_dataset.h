// torchtune's SFTDataset over a multimodal message transform: a record's conversation rendered by
// the run's model transform with its image token where each image sits, every image decoded (from
// its file or the record's bytes) and tiled. Cross-attention (llama3_2_vision_transform): each
// image's text-to-image mask (torchtune's VisionCrossAttentionMask) over the rendered tokens. In
// place (llama4_transform): each image token replaced by the image's tokens (its tile grid), the
// expanded sequence truncated to max_seq_len, images wholly past the cut dropped and an image the
// cut splits an error; no encoder_mask.
#pragma once

#include <ft/dataset.h>
#include <ft/image_transform.h>

#include <memory>

#include "multimodal_message_transforms.h"
#include "record_source.h"

namespace ft_ds {

class MultimodalSftDataset final : public ft::Dataset {
 public:
  MultimodalSftDataset(std::unique_ptr<RecordSource> records, std::unique_ptr<MultimodalMessageTransform> transform,
                       std::shared_ptr<const ft::Tokenizer> tokenizer);
  std::size_t size() const override { return records_->size(); }
  ft::Sample get(std::size_t index) const override;

 private:
  std::unique_ptr<RecordSource> records_;
  std::unique_ptr<MultimodalMessageTransform> transform_;
  std::shared_ptr<const ft::Tokenizer> tokenizer_;
  const ft::ImageTransform* images_;
};

}  // namespace ft_ds
