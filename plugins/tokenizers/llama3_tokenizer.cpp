// torchtune.models.llama3.llama3_tokenizer: tiktoken `tokenizer.model` or HF `tokenizer.json`,
// Llama 3 special tokens, and the Llama 3 chat format:
//   <|begin_of_text|> (<|start_header_id|>role<|end_header_id|>\n\n content <|eot_id|>)* <|end_of_text|>
#include <ft/errors.h>

#include <cctype>

#include "bpe_loaders.h"
#include "pretokenize_patterns.h"
#include "tokenizer_factories.h"

namespace ft_tok {

namespace {

// torchtune's LLAMA3_SPECIAL_TOKENS: the named ones, then reserved tokens filling 128013..128255.
std::vector<AddedToken> llama3_special_tokens() {
  std::vector<AddedToken> t = {
      {"<|begin_of_text|>", 128000},
      {"<|end_of_text|>", 128001},
      {"<|reserved_special_token_0|>", 128002},
      {"<|reserved_special_token_1|>", 128003},
      {"<|finetune_right_pad_id|>", 128004},
      {"<|step_id|>", 128005},
      {"<|start_header_id|>", 128006},
      {"<|end_header_id|>", 128007},
      {"<|eom_id|>", 128008},
      {"<|eot_id|>", 128009},
      {"<|python_tag|>", 128010},
      {"<|image|>", 128256},
      {"<|video|>", 128012},
      {"<|reserved_special_token_245|>", 128011},
  };
  const int named = static_cast<int>(t.size());
  for (int i = 0; i < 257 - named; ++i)
    t.push_back({"<|reserved_special_token_" + std::to_string(2 + i) + "|>", 128013 + i});
  return t;
}

class Llama3Tokenizer final : public ModelTokenizer {
 public:
  Llama3Tokenizer(std::shared_ptr<const TextCodec> codec, std::int64_t max_seq_len, Truncation truncation)
      : ModelTokenizer(std::move(codec), {}, max_seq_len, truncation) {
    ids_.bos = token_or_default("<|begin_of_text|>");
    ids_.eos = token_or_default("<|end_of_text|>");
    ids_.pad = token_or_default("<|finetune_right_pad_id|>");
    start_header_ = token_or_default("<|start_header_id|>");
    end_header_ = token_or_default("<|end_header_id|>");
    eot_ = token_or_default("<|eot_id|>");
    eom_ = token_or_default("<|eom_id|>");
    python_tag_ = token_or_default("<|python_tag|>");
    blank_line_ = encode_plain("\n\n");
    image_ = codec_->token_id("<|image|>");
  }

  ft::TokenizedMessages tokenize_messages(const std::vector<ft::Message>& messages,
                                          bool add_end_tokens) const override {
    ft::TokenizedMessages out;
    out.tokens.push_back(ids_.bos);
    out.mask.push_back(true);
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const auto& m = messages[i];
      std::vector<std::int64_t> t{start_header_};
      append(t, encode_plain(strip_ascii_whitespace(m.role)));
      t.push_back(end_header_);
      append(t, blank_line_);
      if (m.ipython) t.push_back(python_tag_);
      append_content(t, m);
      const bool end = i + 1 == messages.size() ? add_end_tokens : true;
      if (end) t.push_back(m.eot ? eot_ : eom_);
      append(out.tokens, t);
      out.mask.insert(out.mask.end(), t.size(), m.masked);
      if (max_seq_len_ > 0 && static_cast<std::int64_t>(out.tokens.size()) >= max_seq_len_) break;
    }
    if (add_end_tokens) {
      out.tokens.push_back(ids_.eos);
      out.mask.push_back(true);
    }
    finish(out, add_end_tokens, true);
    return out;
  }

  std::vector<std::int64_t> stop_tokens() const override { return {ids_.eos, eot_, eom_}; }

 private:
  // torchtune's content list: the text between images, each piece stripped, and <|image|> for
  // each image.
  void append_content(std::vector<std::int64_t>& t, const ft::Message& m) const {
    append(t, encode_with_images(m, image_, "Llama 3"));
  }

  // Llama 3.0's tokenizer.json names some ids <|reserved_special_token_N|> that Llama 3.1 and
  // torchtune call <|finetune_right_pad_id|>, <|eom_id|>, <|python_tag|>: fall back to the id.
  std::int64_t token_or_default(const std::string& name) const {
    if (auto id = codec_->token_id(name)) return *id;
    for (const auto& t : llama3_special_tokens())
      if (t.content == name && t.id < codec_->vocab_size()) return t.id;
    return required_token(name);
  }
  static void append(std::vector<std::int64_t>& to, const std::vector<std::int64_t>& from) {
    to.insert(to.end(), from.begin(), from.end());
  }
  std::int64_t start_header_, end_header_, eot_, eom_, python_tag_;
  std::optional<std::int64_t> image_;
  std::vector<std::int64_t> blank_line_;
};

}  // namespace

std::unique_ptr<ft::Tokenizer> make_llama3_tokenizer(const std::string& path, std::int64_t max_seq_len,
                                                     Truncation truncation,
                                                     std::optional<std::vector<AddedToken>> special_tokens) {
  std::shared_ptr<const TextCodec> codec;
  if (looks_like_json(path)) {
    codec = std::make_shared<BpeCodec>(load_hf_tokenizer_json(path));
  } else {
    codec = std::make_shared<BpeCodec>(
        load_tiktoken(path, kCl100kPattern, special_tokens ? std::move(*special_tokens) : llama3_special_tokens()));
  }
  return std::make_unique<Llama3Tokenizer>(std::move(codec), max_seq_len, truncation);
}

}  // namespace ft_tok
