#include "sft_dataset.h"

#include <ft/errors.h>

namespace ft_ds {

SftDataset::SftDataset(std::unique_ptr<RecordSource> records, std::unique_ptr<MessageTransform> transform,
                       std::shared_ptr<const ft::Tokenizer> tokenizer)
    : records_(std::move(records)), transform_(std::move(transform)), tokenizer_(std::move(tokenizer)) {
  // A bad record should fail before training starts, not at its first draw.
  if (records_->size() > 0) get(0);
}

ft::Sample SftDataset::get(std::size_t index) const {
  if (index >= records_->size())
    throw ft::Error("sample index " + std::to_string(index) + " out of range (" + std::to_string(records_->size()) +
                    " records)");
  auto messages = (*transform_)(records_->record(index), index);
  validate_messages(messages, index);
  return sample_of(tokenizer_->tokenize_messages(messages, true));
}

ft::Sample sample_of(ft::TokenizedMessages rendered) {
  ft::Sample s;
  s.tokens = std::move(rendered.tokens);
  s.labels.resize(s.tokens.size());
  for (std::size_t i = 0; i < s.tokens.size(); ++i) s.labels[i] = rendered.mask[i] ? ft::kIgnoreIndex : s.tokens[i];
  s.truncated = rendered.truncated;
  return s;
}

std::shared_ptr<const ft::Tokenizer> require_tokenizer(const ft::Dataset::Args& args, const std::string& component) {
  if (!args.tokenizer)
    throw ft::Error(component +
                    " tokenizes text and needs a tokenizer: add a [tokenizer] table, e.g.\n"
                    "  [tokenizer]\n  _component_ = \"torchtune.models.llama3.llama3_tokenizer\"\n"
                    "  path = \"/path/to/tokenizer.json\"\n  max_seq_len = 2048");
  return args.tokenizer;
}

}  // namespace ft_ds
