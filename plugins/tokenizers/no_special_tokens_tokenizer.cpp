#include "no_special_tokens_tokenizer.h"

#include "leading_space_trim.h"

namespace ft_tok {

namespace {

class NoSpecialTokensTokenizer final : public ModelTokenizer {
 public:
  NoSpecialTokensTokenizer(std::shared_ptr<const TextCodec> codec, NoSpecialTokensFormat format,
                           std::int64_t max_seq_len, Truncation truncation)
      : ModelTokenizer(std::move(codec), {}, max_seq_len, truncation),
        prompt_template_(format.prompt_template),
        trim_(*codec_) {
    ids_.bos = required_token(format.bos_token);
    ids_.eos = required_token(format.eos_token);
    ids_.pad = format.pad_id;
  }

  ft::TokenizedMessages tokenize_messages(const std::vector<ft::Message>& messages,
                                          bool add_end_tokens) const override {
    ft::TokenizedMessages out;
    bool start_of_turn = true, prev_ends_with_space = false, last_masked = false;
    for (const auto& m : apply_prompt_template(prompt_template_, messages)) {
      const bool end_of_turn = m.role == "assistant";
      if (start_of_turn) {
        out.tokens.push_back(ids_.bos);
        out.mask.push_back(m.masked);
      }
      const bool trim = !start_of_turn && !prev_ends_with_space;
      std::vector<std::int64_t> tokens;
      for (const auto& piece : m.pieces) {
        std::string_view text = piece;
        while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
        const auto ids = trim_.encode(*codec_, text, trim);
        tokens.insert(tokens.end(), ids.begin(), ids.end());
      }
      prev_ends_with_space = !m.pieces.empty() && !m.pieces.back().empty() && m.pieces.back().back() == ' ';
      out.tokens.insert(out.tokens.end(), tokens.begin(), tokens.end());
      out.mask.insert(out.mask.end(), tokens.size(), m.masked);
      if (end_of_turn && add_end_tokens) {
        out.tokens.push_back(ids_.eos);
        out.mask.push_back(m.masked);
      }
      start_of_turn = end_of_turn;
      last_masked = m.masked;
      if (max_seq_len_ > 0 && static_cast<std::int64_t>(out.tokens.size()) >= max_seq_len_) break;
    }
    finish(out, add_end_tokens, last_masked);
    return out;
  }

 private:
  PromptTemplate prompt_template_;
  LeadingSpaceTrim trim_;
};

}  // namespace

std::unique_ptr<ft::Tokenizer> make_no_special_tokens_tokenizer(std::shared_ptr<const TextCodec> codec,
                                                                NoSpecialTokensFormat format, std::int64_t max_seq_len,
                                                                Truncation truncation) {
  return std::make_unique<NoSpecialTokensTokenizer>(std::move(codec), std::move(format), max_seq_len, truncation);
}

}  // namespace ft_tok
