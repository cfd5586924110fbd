#include "leading_space_trim.h"

#include <algorithm>
#include <string>

namespace ft_tok {

LeadingSpaceTrim::LeadingSpaceTrim(const TextCodec& codec) {
  // torchtune's WHITESPACE_CHARS.
  for (const char* c : {" ", "\n", "\t", "\r", "\v"})
    encodes_whitespace_ = encodes_whitespace_ || !codec.encode(c).empty();
  prefix_tokens_ = codec.encode("\n").size();
}

std::vector<std::int64_t> LeadingSpaceTrim::encode(const TextCodec& codec, std::string_view text, bool trim) const {
  if (!trim || !encodes_whitespace_) return codec.encode(text);
  auto ids = codec.encode("\n" + std::string(text));
  ids.erase(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(std::min(prefix_tokens_, ids.size())));
  return ids;
}

}  // namespace ft_tok
