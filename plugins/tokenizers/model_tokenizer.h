// Shared part of torchtune's model tokenizers: a TextCodec plus the model family's special ids,
// max_seq_len and truncation. Each family adds its chat format.
#pragma once

#include <ft/tokenizer.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text_codec.h"

namespace ft_tok {

enum class Truncation { Right, Left };
Truncation parse_truncation(const std::string& value);  // "right" / "left", else throws

// torchtune's `truncate`: keep max_seq_len items from the chosen side; if `last` is given and
// the kept sequence does not end with it, overwrite the final item with it.
template <class T>
std::vector<T> truncate(const std::vector<T>& items, std::int64_t max_seq_len, const std::optional<T>& last,
                        Truncation side) {
  std::vector<T> out;
  const auto n = static_cast<std::int64_t>(items.size());
  const auto keep = std::min(n, max_seq_len);
  if (side == Truncation::Right)
    out.assign(items.begin(), items.begin() + keep);
  else
    out.assign(items.end() - keep, items.end());
  if (last && !out.empty() && out.back() != *last) out.back() = *last;
  return out;
}

// Python's str.strip() on ASCII white space, as torchtune's Llama tokenizers strip text pieces.
std::string_view strip_ascii_whitespace(std::string_view s);

class ModelTokenizer : public ft::Tokenizer {
 public:
  struct Ids {
    std::int64_t bos = -1;  // -1: the family has none (Qwen)
    std::int64_t eos = -1;
    std::int64_t pad = 0;
  };
  ModelTokenizer(std::shared_ptr<const TextCodec> codec, Ids ids, std::int64_t max_seq_len, Truncation truncation)
      : codec_(std::move(codec)), ids_(ids), max_seq_len_(max_seq_len), truncation_(truncation) {}

  std::vector<std::int64_t> encode(std::string_view text, bool add_bos, bool add_eos) const override;
  std::string decode(const std::vector<std::int64_t>& ids) const override { return codec_->decode(ids); }
  std::int64_t vocab_size() const override { return codec_->vocab_size(); }
  std::int64_t bos_id() const override { return ids_.bos; }
  std::int64_t eos_id() const override { return ids_.eos; }
  std::int64_t pad_id() const override { return ids_.pad; }
  std::optional<std::int64_t> special_token(std::string_view text) const override { return codec_->token_id(text); }
  std::int64_t max_seq_len() const override { return max_seq_len_; }

 protected:
  std::vector<std::int64_t> encode_plain(std::string_view text) const { return codec_->encode(text); }
  // torchtune's content list of a message (Llama 3.2 Vision, Llama 4): the text between images,
  // each piece stripped, and `image_token` where each image sits (m.image_offsets); `family` names
  // the tokenizer when it has no image token.
  std::vector<std::int64_t> encode_with_images(const ft::Message& m, std::optional<std::int64_t> image_token,
                                               const std::string& family) const;
  // The id of a special token the chat format needs; throws naming it when the vocabulary lacks it.
  std::int64_t required_token(const std::string& text) const;
  // When finish() truncates: torchtune's Llama 2, Mistral, Gemma and Qwen tokenizers always (so with
  // end tokens a shorter conversation that does not end in EOS gets its last token replaced by EOS
  // too), its Phi-3 and Phi-4 tokenizers only a conversation that reached max_seq_len.
  enum class TruncateWhen { Always, AtMaxSeqLen };
  // Truncates tokens and mask to max_seq_len (if set), ending them with `eos` / `eos_mask`.
  void finish(ft::TokenizedMessages& out, bool add_end_tokens, std::optional<bool> eos_mask,
              TruncateWhen when = TruncateWhen::Always) const;

  std::shared_ptr<const TextCodec> codec_;
  Ids ids_;
  std::int64_t max_seq_len_;
  Truncation truncation_;
};

}  // namespace ft_tok
