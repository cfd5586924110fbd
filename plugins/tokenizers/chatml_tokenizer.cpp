// The ChatML rendering of torchtune's Qwen 2 and Qwen 2.5 tokenizers (chatml_tokenizer.h).
#include "chatml_tokenizer.h"

#include <ft/errors.h>

#include <optional>
#include <string>
#include <vector>

namespace ft_tok {

namespace {

class ChatMlTokenizer final : public ModelTokenizer {
 public:
  ChatMlTokenizer(std::shared_ptr<const TextCodec> codec, std::int64_t max_seq_len, Truncation truncation,
                  ChatMlFormat format)
      : ModelTokenizer(std::move(codec), {}, max_seq_len, truncation), format_(format) {
    ids_.eos = required_token("<|im_end|>");
    ids_.pad = required_token("<|endoftext|>");
    im_start_ = required_token("<|im_start|>");
    im_end_ = ids_.eos;
    tool_call_start_ = codec_->token_id("<tool_call>");
    tool_call_end_ = codec_->token_id("</tool_call>");
    newline_ = encode_plain("\n");
  }

  ft::TokenizedMessages tokenize_messages(const std::vector<ft::Message>& messages,
                                          bool add_end_tokens) const override {
    ft::TokenizedMessages out;
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const auto& m = messages[i];
      std::vector<std::int64_t> t;
      header(messages, i, t);
      append(t, encode_plain(m.content));
      footer(messages, i, t);
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

  // A chat turn ends with <|im_end|>, a base model's document with <|endoftext|>: torchtune's
  // Qwen 2 and Qwen 2.5 tokenizers stop at both.
  std::vector<std::int64_t> stop_tokens() const override { return {ids_.eos, ids_.pad}; }

 private:
  static void append(std::vector<std::int64_t>& to, const std::vector<std::int64_t>& from) {
    to.insert(to.end(), from.begin(), from.end());
  }
  bool tagged() const { return format_.tools == ChatMlTools::Tagged; }
  void start(std::vector<std::int64_t>& t, const std::string& role) const {
    t.push_back(im_start_);
    append(t, encode_plain(role + "\n"));
  }
  void end(std::vector<std::int64_t>& t) const {
    t.push_back(im_end_);
    append(t, newline_);
  }
  std::int64_t tool_token(const std::optional<std::int64_t>& id, const char* name) const {
    if (!id)
      throw ft::Error(std::string("the tokenizer's vocabulary has no ") + name + " token for an ipython message");
    return *id;
  }
  void header(const std::vector<ft::Message>& ms, std::size_t i, std::vector<std::int64_t>& t) const {
    const auto& m = ms[i];
    if (m.role == "ipython") {
      if (!tagged()) return;
      if (i == 0 || ms[i - 1].role != "ipython") {
        start(t, "user");
        append(t, encode_plain("<tool_response>\n"));
      } else {
        append(t, encode_plain("\n<tool_response>\n"));
      }
      return;
    }
    start(t, m.role);
    if (tagged() && m.role == "assistant" && m.ipython) {
      t.push_back(tool_token(tool_call_start_, "<tool_call>"));
      append(t, newline_);
    }
  }
  void footer(const std::vector<ft::Message>& ms, std::size_t i, std::vector<std::int64_t>& t) const {
    const auto& m = ms[i];
    if (m.role == "ipython") {
      if (!tagged()) return;
      append(t, encode_plain("\n</tool_response>"));
      if (i + 1 == ms.size() || ms[i + 1].role != "ipython") end(t);
      return;
    }
    if (tagged() && m.role == "assistant" && m.ipython) {
      append(t, newline_);
      t.push_back(tool_token(tool_call_end_, "</tool_call>"));
    }
    if (m.role != "assistant" || i + 1 != ms.size()) end(t);
  }

  ChatMlFormat format_;
  std::int64_t im_start_, im_end_;
  std::optional<std::int64_t> tool_call_start_, tool_call_end_;
  std::vector<std::int64_t> newline_;
};

}  // namespace

std::unique_ptr<ft::Tokenizer> make_chatml_tokenizer(std::shared_ptr<const TextCodec> codec, std::int64_t max_seq_len,
                                                     Truncation truncation, ChatMlFormat format) {
  return std::make_unique<ChatMlTokenizer>(std::move(codec), max_seq_len, truncation, format);
}

}  // namespace ft_tok
