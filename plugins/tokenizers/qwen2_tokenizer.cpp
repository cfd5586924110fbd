// torchtune.models.qwen2.qwen2_tokenizer: the Qwen byte-level BPE with Qwen 2's three special
// tokens (<|endoftext|> 151643, <|im_start|> 151644, <|im_end|> 151645; Qwen 2.5 adds tool, vision
// and fill-in-the-middle tokens after them) and plain ChatML:
//   (<|im_start|>role\n content <|im_end|>\n)* with the last assistant turn left open, then EOS
// (<|im_end|>). Unlike Qwen 2.5, ipython (tool result) messages get no header or footer at all.
#include "qwen_codec.h"
#include "tokenizer_factories.h"

namespace ft_tok {

namespace {

std::vector<AddedToken> qwen2_special_tokens() {
  return {{"<|endoftext|>", 151643}, {"<|im_start|>", 151644}, {"<|im_end|>", 151645}};
}

class Qwen2Tokenizer final : public ModelTokenizer {
 public:
  Qwen2Tokenizer(std::shared_ptr<const TextCodec> codec, std::int64_t max_seq_len, Truncation truncation)
      : ModelTokenizer(std::move(codec), {}, max_seq_len, truncation) {
    ids_.eos = required_token("<|im_end|>");
    ids_.pad = required_token("<|endoftext|>");
    im_start_ = required_token("<|im_start|>");
    newline_ = encode_plain("\n");
  }

  ft::TokenizedMessages tokenize_messages(const std::vector<ft::Message>& messages,
                                          bool add_end_tokens) const override {
    ft::TokenizedMessages out;
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const auto& m = messages[i];
      const bool wrapped = m.role != "ipython";
      std::vector<std::int64_t> t;
      if (wrapped) {
        t.push_back(im_start_);
        append(t, encode_plain(m.role + "\n"));
      }
      append(t, encode_plain(m.content));
      if (wrapped && (m.role != "assistant" || i + 1 != messages.size())) {
        t.push_back(ids_.eos);  // <|im_end|>
        append(t, newline_);
      }
      append(out.tokens, t);
      out.mask.insert(out.mask.end(), t.size(), m.masked);
      if (max_seq_len_ > 0 && static_cast<std::int64_t>(out.tokens.size()) >= max_seq_len_) break;
    }
    const bool last_mask = out.mask.empty() ? true : static_cast<bool>(out.mask.back());
    if (add_end_tokens) {
      out.tokens.push_back(ids_.eos);
      out.mask.push_back(last_mask);
    }
    finish(out, add_end_tokens, true);
    return out;
  }

 private:
  static void append(std::vector<std::int64_t>& to, const std::vector<std::int64_t>& from) {
    to.insert(to.end(), from.begin(), from.end());
  }

  std::int64_t im_start_;
  std::vector<std::int64_t> newline_;
};

}  // namespace

std::unique_ptr<ft::Tokenizer> make_qwen2_tokenizer(const std::string& path, const std::string& merges_file,
                                                    std::int64_t max_seq_len, Truncation truncation,
                                                    std::optional<std::vector<AddedToken>> special_tokens) {
  auto codec = load_qwen_codec(path, merges_file, special_tokens ? std::move(*special_tokens) : qwen2_special_tokens());
  return std::make_unique<Qwen2Tokenizer>(std::move(codec), max_seq_len, truncation);
}

}  // namespace ft_tok
