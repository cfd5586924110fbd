#include "tiktoken_slices.h"

#include "utf8.h"

namespace ft_tok {

namespace {

// Meta's TIKTOKEN_MAX_ENCODE_CHARS (tiktoken panics on longer input) and MAX_NO_WHITESPACES_CHARS
// (tiktoken's regex backtracks badly on long runs).
constexpr std::size_t kMaxSliceChars = 400000;
constexpr std::size_t kMaxRunChars = 25000;

// Python's str.isspace: Unicode's White_Space characters and the ASCII separators U+001C..U+001F.
bool python_isspace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Meta's _split_whitespaces_or_nonwhitespaces on one non-empty slice.
void cut_long_runs(std::string_view slice, std::vector<std::string_view>& out) {
  std::size_t start = 0, run = 0;
  bool run_is_space = false;
  for (std::size_t i = 0; i < slice.size();) {
    const std::size_t at = i;
    const bool space = python_isspace(next_code_point(slice, i));
    if (at == 0) run_is_space = space;
    if (space != run_is_space) {
      run_is_space = space;
      run = 1;
    } else if (++run > kMaxRunChars) {
      out.push_back(slice.substr(start, at - start));
      start = at;
      run = 1;
    }
  }
  out.push_back(slice.substr(start));
}

}  // namespace

std::vector<std::string_view> tiktoken_slices(std::string_view text) {
  std::vector<std::string_view> out;
  if (text.empty()) return out;
  // No run of more than 25,000 characters fits in 25,000 bytes.
  if (text.size() <= kMaxRunChars) {
    out.push_back(text);
    return out;
  }
  std::size_t start = 0, chars = 0;
  for (std::size_t i = 0; i < text.size();) {
    next_code_point(text, i);
    if (++chars == kMaxSliceChars) {
      cut_long_runs(text.substr(start, i - start), out);
      start = i;
      chars = 0;
    }
  }
  if (start < text.size()) cut_long_runs(text.substr(start), out);
  return out;
}

std::vector<std::int64_t> SlicedTiktokenCodec::encode(std::string_view text) const {
  std::vector<std::int64_t> ids;
  for (const auto slice : tiktoken_slices(text)) {
    const auto part = pipeline_->encode(slice);
    ids.insert(ids.end(), part.begin(), part.end());
  }
  return ids;
}

}  // namespace ft_tok
