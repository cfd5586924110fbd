// torchtune.datasets.text_completion_dataset: each record's text is encoded with BOS and
// (add_eos) EOS, every token a label. With the tokenizer's max_seq_len set, a longer document is
// split into consecutive max_seq_len chunks, each its own sample, so no text is thrown away.
// Encoded once, up front, into one flat id buffer.
#pragma once

#include <ft/dataset.h>

#include "record_source.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace ft_ds {

class TextCompletionDataset final : public ft::Dataset {
 public:
  TextCompletionDataset(const RecordSource& records, const std::string& column, bool add_eos,
                        const ft::Tokenizer& tokenizer);
  std::size_t size() const override { return starts_.size() - 1; }
  ft::Sample get(std::size_t index) const override;

 private:
  std::vector<std::int32_t> ids_;
  std::vector<std::size_t> starts_;  // sample i is ids_[starts_[i], starts_[i + 1])
};

}  // namespace ft_ds
