// torchtune.models.phi4.phi4_tokenizer: Phi-4's vocab.json + merges.txt (vocab_path, merges_path:
// byte-level BPE over OpenAI's cl100k_base vocabulary) with Phi-4's special tokens (<|endoftext|>
// 100257, <|im_start|> 100264, <|im_end|> 100265, <|im_sep|> 100266, <|dummy_N|> up to 100351; or
// the added_tokens of special_tokens_path) and the chat format
//   <|im_start|>role<|im_sep|>content<|im_end|> ...
// where an assistant message gets its <|im_end|> only with end tokens. BOS is <|endoftext|>, EOS
// <|im_end|>, pad <|dummy_85|>.
//
// Text is encoded as Phi-4's published tokenizer encodes it: the cl100k pre-tokenizer (torchtune's
// own CL100K_PATTERN) and special tokens split out of the text, which gives tiktoken's cl100k_base
// ids. torchtune's Phi4Tokenizer encodes through its GPT2BaseTokenizer instead, which splits with
// GPT-2's regex in Python's `re` (a run of digits, letters and underscores is one word) and never
// matches special tokens in text, so its ids differ from the published tokenizer's on text with
// digits, underscores or capitalised contractions; fthost keeps to the tokenizer Phi-4 was trained
// with, and torchtune's chat format around it.
#include <ft/errors.h>

#include <unordered_set>

#include "bpe_loaders.h"
#include "pretokenize_patterns.h"
#include "tokenizer_factories.h"

namespace ft_tok {

namespace {

// torchtune's PHI4_SPECIAL_TOKENS: cl100k_base's own specials at their ids, ChatML's three, and
// <|dummy_N|> filling the rest of 100256..100351.
std::vector<AddedToken> phi4_special_tokens() {
  std::vector<AddedToken> t = {
      {"<|dummy_0|>", 100256},    {"<|endoftext|>", 100257}, {"<|fim_prefix|>", 100258}, {"<|fim_middle|>", 100259},
      {"<|fim_suffix|>", 100260}, {"<|dummy_1|>", 100261},   {"<|dummy_2|>", 100262},    {"<|dummy_3|>", 100263},
      {"<|im_start|>", 100264},   {"<|im_end|>", 100265},    {"<|im_sep|>", 100266},     {"<|endofprompt|>", 100276},
  };
  int dummy = 4;
  for (TokenId id = 100267; id < 100352; ++id)
    if (id != 100276) t.push_back({"<|dummy_" + std::to_string(dummy++) + "|>", id});
  return t;
}

class Phi4Tokenizer final : public ModelTokenizer {
 public:
  Phi4Tokenizer(std::shared_ptr<const TextCodec> codec, const std::vector<AddedToken>& special_tokens,
                std::int64_t max_seq_len, Truncation truncation)
      : ModelTokenizer(std::move(codec), {}, max_seq_len, truncation) {
    for (const auto& t : special_tokens) special_ids_.insert(t.id);
    ids_.bos = required_token("<|endoftext|>");
    ids_.eos = required_token("<|im_end|>");
    ids_.pad = required_token("<|dummy_85|>");
    im_start_ = required_token("<|im_start|>");
    im_sep_ = required_token("<|im_sep|>");
  }

  // torchtune's decode(skip_special_tokens=True): the special tokens are left out.
  std::string decode(const std::vector<std::int64_t>& ids) const override {
    std::vector<std::int64_t> text_ids;
    for (auto id : ids)
      if (!special_ids_.count(id)) text_ids.push_back(id);
    return codec_->decode(text_ids);
  }

  ft::TokenizedMessages tokenize_messages(const std::vector<ft::Message>& messages,
                                          bool add_end_tokens) const override {
    ft::TokenizedMessages out;
    bool last_masked = false;
    for (const auto& m : messages) {
      std::vector<std::int64_t> t{im_start_};
      const auto role = encode_plain(m.role);
      t.insert(t.end(), role.begin(), role.end());
      t.push_back(im_sep_);
      std::string_view text = m.content;
      while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
      const auto body = encode_plain(text);
      t.insert(t.end(), body.begin(), body.end());
      if (m.role != "assistant" || add_end_tokens) t.push_back(ids_.eos);
      out.tokens.insert(out.tokens.end(), t.begin(), t.end());
      out.mask.insert(out.mask.end(), t.size(), m.masked);
      last_masked = m.masked;
      if (max_seq_len_ > 0 && static_cast<std::int64_t>(out.tokens.size()) >= max_seq_len_) break;
    }
    finish(out, add_end_tokens, last_masked, TruncateWhen::AtMaxSeqLen);
    return out;
  }

 private:
  std::unordered_set<std::int64_t> special_ids_;
  std::int64_t im_start_, im_sep_;
};

}  // namespace

std::unique_ptr<ft::Tokenizer> make_phi4_tokenizer(const std::string& vocab_path, const std::string& merges_path,
                                                   std::int64_t max_seq_len, Truncation truncation,
                                                   std::optional<std::vector<AddedToken>> special_tokens) {
  auto special = special_tokens ? std::move(*special_tokens) : phi4_special_tokens();
  auto codec = std::make_shared<BpeCodec>(
      load_vocab_merges(vocab_path, merges_path, kCl100kPattern, Normalization::None, special));
  return std::make_unique<Phi4Tokenizer>(std::move(codec), special, max_seq_len, truncation);
}

}  // namespace ft_tok
