// torchtune.models.llama2.llama2_tokenizer: SentencePiece `.model` (or HF `tokenizer.json`),
// BOS <s>, EOS </s>, pad 0, and Llama2ChatTemplate rendered without special tokens:
//   <s>[INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST] assistant</s>
// Each text piece is encoded on its own; pieces after the first of a turn are encoded without
// SentencePiece's leading "▁" (torchtune's trim_leading_whitespace).
#include <ft/errors.h>

#include "bpe_loaders.h"
#include "tokenizer_factories.h"

namespace ft_tok {

namespace {

class Llama2Tokenizer final : public ModelTokenizer {
 public:
  Llama2Tokenizer(std::shared_ptr<const TextCodec> codec, std::int64_t max_seq_len, Truncation truncation,
                  bool chat_template)
      : ModelTokenizer(std::move(codec), {}, max_seq_len, truncation), chat_template_(chat_template) {
    ids_.bos = required_token("<s>");
    ids_.eos = required_token("</s>");
    ids_.pad = 0;
    encodes_whitespace_ = !encode_plain(" ").empty() || !encode_plain("\n").empty();
    encoded_prefix_size_ = encode_plain("\n").size();
  }

  ft::TokenizedMessages tokenize_messages(const std::vector<ft::Message>& messages,
                                          bool add_end_tokens) const override {
    const auto turns = chat_template_ ? apply_template(messages) : plain(messages);
    ft::TokenizedMessages out;
    bool start_of_turn = true, prev_ends_with_space = false;
    bool last_masked = false;
    for (const auto& turn : turns) {
      const bool end_of_turn = turn.role == "assistant";
      if (start_of_turn) {
        out.tokens.push_back(ids_.bos);
        out.mask.push_back(turn.masked);
      }
      const bool trim = !start_of_turn && !prev_ends_with_space;
      std::vector<std::int64_t> tokens;
      for (const auto& piece : turn.pieces) {
        std::string_view text = piece;
        while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
        auto ids = encode_trimmed(text, trim);
        tokens.insert(tokens.end(), ids.begin(), ids.end());
      }
      prev_ends_with_space = !turn.pieces.empty() && !turn.pieces.back().empty() && turn.pieces.back().back() == ' ';
      out.tokens.insert(out.tokens.end(), tokens.begin(), tokens.end());
      out.mask.insert(out.mask.end(), tokens.size(), turn.masked);
      if (end_of_turn) {
        if (add_end_tokens) {
          out.tokens.push_back(ids_.eos);
          out.mask.push_back(turn.masked);
        }
        start_of_turn = true;
      } else {
        start_of_turn = false;
      }
      last_masked = turn.masked;
      if (max_seq_len_ > 0 && static_cast<std::int64_t>(out.tokens.size()) >= max_seq_len_) break;
    }
    finish(out, add_end_tokens, last_masked);
    return out;
  }

 private:
  struct Turn {
    std::string role;
    std::vector<std::string> pieces;
    bool masked;
  };
  static std::vector<Turn> plain(const std::vector<ft::Message>& messages) {
    std::vector<Turn> turns;
    for (const auto& m : messages) turns.push_back({m.role, {m.content}, m.masked});
    return turns;
  }
  // Llama2ChatTemplate: the system prompt goes inside the next user turn's [INST] block.
  static std::vector<Turn> apply_template(const std::vector<ft::Message>& messages) {
    std::vector<Turn> turns;
    std::vector<std::string> system;
    for (const auto& m : messages) {
      if (m.role == "system") {
        system = {"<<SYS>>\n", m.content, "\n<</SYS>>\n\n"};
        continue;
      }
      Turn t{m.role, {}, m.masked};
      if (m.role == "user") {
        t.pieces.push_back("[INST] ");
        t.pieces.insert(t.pieces.end(), system.begin(), system.end());
        t.pieces.push_back(m.content);
        t.pieces.push_back(" [/INST] ");
      } else {
        t.pieces.push_back(m.content);
      }
      turns.push_back(std::move(t));
    }
    return turns;
  }
  // Encodes "\n" + text and drops the prefix's tokens, so the text gets no leading "▁".
  std::vector<std::int64_t> encode_trimmed(std::string_view text, bool trim) const {
    if (!trim || !encodes_whitespace_) return encode_plain(text);
    auto ids = encode_plain("\n" + std::string(text));
    ids.erase(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(std::min(encoded_prefix_size_, ids.size())));
    return ids;
  }

  bool chat_template_;
  bool encodes_whitespace_ = true;
  std::size_t encoded_prefix_size_ = 0;
};

}  // namespace

std::unique_ptr<ft::Tokenizer> make_llama2_tokenizer(const std::string& path, std::int64_t max_seq_len,
                                                     Truncation truncation, bool chat_template) {
  std::shared_ptr<const TextCodec> codec;
  if (looks_like_json(path))
    codec = std::make_shared<BpeCodec>(load_hf_tokenizer_json(path));
  else
    codec = load_sentencepiece(path);
  return std::make_unique<Llama2Tokenizer>(std::move(codec), max_seq_len, truncation, chat_template);
}

}  // namespace ft_tok
