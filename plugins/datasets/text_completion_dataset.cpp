#include "text_completion_dataset.h"

#include <ft/errors.h>

#include "message_transforms.h"

namespace ft_ds {

TextCompletionDataset::TextCompletionDataset(const RecordSource& records, const std::string& column, bool add_eos,
                                             const ft::Tokenizer& tokenizer) {
  const std::int64_t chunk = tokenizer.max_seq_len();
  starts_.push_back(0);
  for (std::size_t r = 0; r < records.size(); ++r) {
    const auto ids = tokenizer.encode(text_column(records.record(r), column, r), true, add_eos);
    for (std::size_t begin = 0; begin < ids.size();) {
      const std::size_t end = chunk > 0 ? std::min(ids.size(), begin + static_cast<std::size_t>(chunk)) : ids.size();
      ids_.insert(ids_.end(), ids.begin() + static_cast<std::ptrdiff_t>(begin),
                  ids.begin() + static_cast<std::ptrdiff_t>(end));
      starts_.push_back(ids_.size());
      begin = end;
    }
  }
  if (size() == 0) throw ft::Error("text completion dataset has no text");
}

ft::Sample TextCompletionDataset::get(std::size_t index) const {
  if (index >= size())
    throw ft::Error("sample index " + std::to_string(index) + " out of range (" + std::to_string(size()) + " samples)");
  ft::Sample s;
  s.tokens.assign(ids_.begin() + static_cast<std::ptrdiff_t>(starts_[index]),
                  ids_.begin() + static_cast<std::ptrdiff_t>(starts_[index + 1]));
  s.labels = s.tokens;
  return s;
}

}  // namespace ft_ds
