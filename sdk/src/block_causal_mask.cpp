#include <ft/collate.h>
#include <ft/errors.h>

#include <ATen/ops/zeros.h>

#include <cstring>
#include <string>

namespace ft {

at::Tensor block_causal_mask(const std::vector<std::vector<std::int64_t>>& document_lengths, std::int64_t seq_len) {
  const auto rows = static_cast<std::int64_t>(document_lengths.size());
  at::Tensor mask = at::zeros({rows, seq_len, seq_len}, at::kBool);
  bool* allowed = mask.data_ptr<bool>();
  for (std::int64_t i = 0; i < rows; ++i) {
    std::int64_t start = 0;
    for (const std::int64_t length : document_lengths[static_cast<std::size_t>(i)]) {
      if (length < 0 || start + length > seq_len)
        throw Error("block-causal mask: row " + std::to_string(i) + "'s document lengths do not fit its " +
                    std::to_string(seq_len) + " positions");
      for (std::int64_t r = start; r < start + length; ++r)
        std::memset(allowed + (i * seq_len + r) * seq_len + start, 1, static_cast<std::size_t>(r - start + 1));
      start += length;
    }
    if (start != seq_len)
      throw Error("block-causal mask: row " + std::to_string(i) + "'s document lengths sum to " +
                  std::to_string(start) + ", it has " + std::to_string(seq_len) + " positions");
  }
  return mask;
}

}  // namespace ft
