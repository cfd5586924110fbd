// torchtune's trim_leading_whitespace (SentencePieceBaseTokenizer.encode). SentencePiece starts
// every encoded text with a word boundary ("▁"), so encode(a) + encode(b) != encode(a + b); a piece
// that continues a turn is encoded after "\n" and the "\n"'s own tokens are dropped, which leaves
// the piece without the boundary it would otherwise get.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "text_codec.h"

namespace ft_tok {

class LeadingSpaceTrim {
 public:
  explicit LeadingSpaceTrim(const TextCodec& codec);
  // `text` encoded whole, or without its leading boundary when `trim` (and the vocabulary encodes
  // whitespace at all; a vocabulary that does not has no boundary to trim).
  std::vector<std::int64_t> encode(const TextCodec& codec, std::string_view text, bool trim) const;

 private:
  bool encodes_whitespace_ = false;
  std::size_t prefix_tokens_ = 0;
};

}  // namespace ft_tok
