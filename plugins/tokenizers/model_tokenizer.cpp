#include "model_tokenizer.h"

#include <ft/errors.h>

#include <cctype>

namespace ft_tok {

Truncation parse_truncation(const std::string& value) {
  if (value == "right") return Truncation::Right;
  if (value == "left") return Truncation::Left;
  throw ft::Error("truncation_type must be \"left\" or \"right\", got \"" + value + "\"");
}

std::vector<std::int64_t> ModelTokenizer::encode(std::string_view text, bool add_bos, bool add_eos) const {
  std::vector<std::int64_t> ids;
  if (add_bos && ids_.bos >= 0) ids.push_back(ids_.bos);
  auto body = codec_->encode(text);
  ids.insert(ids.end(), body.begin(), body.end());
  if (add_eos && ids_.eos >= 0) ids.push_back(ids_.eos);
  return ids;
}

std::int64_t ModelTokenizer::required_token(const std::string& text) const {
  auto id = codec_->token_id(text);
  if (!id)
    throw ft::Error("the tokenizer's vocabulary has no special token " + text +
                    ", which this model family's chat format needs");
  return *id;
}

std::string_view strip_ascii_whitespace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::int64_t> ModelTokenizer::encode_with_images(const ft::Message& m,
                                                             std::optional<std::int64_t> image_token,
                                                             const std::string& family) const {
  const std::string_view content = m.content;
  std::vector<std::int64_t> out;
  const auto add = [&](std::string_view piece) {
    const std::vector<std::int64_t> ids = encode_plain(strip_ascii_whitespace(piece));
    out.insert(out.end(), ids.begin(), ids.end());
  };
  std::size_t start = 0;
  for (const std::size_t offset : m.image_offsets) {
    if (offset < start || offset > content.size())
      throw ft::Error("a " + m.role + " message's image offsets must be ascending within its " +
                      std::to_string(content.size()) + " bytes, got " + std::to_string(offset));
    if (!image_token)
      throw ft::Error("this " + family + " tokenizer has no <|image|> token for the message's images (" + m.role + ")");
    add(content.substr(start, offset - start));
    out.push_back(*image_token);
    start = offset;
  }
  add(content.substr(start));
  return out;
}

void ModelTokenizer::finish(ft::TokenizedMessages& out, bool add_end_tokens, std::optional<bool> eos_mask,
                            TruncateWhen when) const {
  if (max_seq_len_ <= 0) return;
  if (when == TruncateWhen::AtMaxSeqLen && static_cast<std::int64_t>(out.tokens.size()) < max_seq_len_) return;
  // With end tokens a conversation stopped early at max_seq_len is one token over it here.
  out.truncated = static_cast<std::int64_t>(out.tokens.size()) > max_seq_len_;
  out.tokens = truncate<std::int64_t>(
      out.tokens, max_seq_len_, add_end_tokens ? std::optional<std::int64_t>(ids_.eos) : std::nullopt, truncation_);
  std::vector<bool> mask(out.mask.begin(), out.mask.end());
  std::vector<char> as_chars(mask.begin(), mask.end());
  auto truncated = truncate<char>(
      as_chars, max_seq_len_, add_end_tokens && eos_mask ? std::optional<char>(*eos_mask) : std::nullopt, truncation_);
  out.mask.assign(truncated.begin(), truncated.end());
}

}  // namespace ft_tok
