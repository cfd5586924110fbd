// torchtune's SFTDataset: records -> messages (a MessageTransform) -> the tokenizer's chat
// format -> tokens, with labels -100 where the message is masked. Tokenized on access.
#pragma once

#include <ft/dataset.h>

#include <memory>
#include <string>

#include "message_transforms.h"
#include "record_source.h"

namespace ft_ds {

class SftDataset final : public ft::Dataset {
 public:
  SftDataset(std::unique_ptr<RecordSource> records, std::unique_ptr<MessageTransform> transform,
             std::shared_ptr<const ft::Tokenizer> tokenizer);
  std::size_t size() const override { return records_->size(); }
  ft::Sample get(std::size_t index) const override;

 private:
  std::unique_ptr<RecordSource> records_;
  std::unique_ptr<MessageTransform> transform_;
  std::shared_ptr<const ft::Tokenizer> tokenizer_;
};

// A rendered conversation as a sample: its tokens, labels -100 where masked, whether it was cut.
ft::Sample sample_of(ft::TokenizedMessages rendered);

// The run's tokenizer, or an error telling the user to configure one for `component`.
std::shared_ptr<const ft::Tokenizer> require_tokenizer(const ft::Dataset::Args& args, const std::string& component);

}  // namespace ft_ds
