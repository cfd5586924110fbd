// torchtune.models.qwen2_5.qwen2_5_tokenizer: `vocab.json` + `merges.txt` (or a `tokenizer.json`),
// Qwen 2.5 special tokens, and ChatML:
//   (<|im_start|>role\n content <|im_end|>\n)* with the last assistant turn left open, then EOS (<|im_end|>).
#include <ft/errors.h>

#include "qwen_codec.h"
#include "tokenizer_factories.h"

namespace ft_tok {

namespace {

std::vector<AddedToken> qwen2_5_special_tokens() {
  const char* names[] = {"<|endoftext|>",      "<|im_start|>",     "<|im_end|>",     "<|object_ref_start|>",
                         "<|object_ref_end|>", "<|box_start|>",    "<|box_end|>",    "<|quad_start|>",
                         "<|quad_end|>",       "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
                         "<|image_pad|>",      "<|video_pad|>",    "<tool_call>",    "</tool_call>",
                         "<|fim_prefix|>",     "<|fim_middle|>",   "<|fim_suffix|>", "<|fim_pad|>",
                         "<|repo_name|>",      "<|file_sep|>"};
  std::vector<AddedToken> t;
  TokenId id = 151643;
  for (const char* n : names) t.push_back({n, id++});
  return t;
}

class Qwen2_5Tokenizer final : public ModelTokenizer {
 public:
  Qwen2_5Tokenizer(std::shared_ptr<const TextCodec> codec, std::int64_t max_seq_len, Truncation truncation)
      : ModelTokenizer(std::move(codec), {}, max_seq_len, truncation) {
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

  // A chat turn ends with <|im_end|>; base models end a document with <|endoftext|>.
  std::vector<std::int64_t> stop_tokens() const override { return {ids_.eos, ids_.pad}; }

 private:
  static void append(std::vector<std::int64_t>& to, const std::vector<std::int64_t>& from) {
    to.insert(to.end(), from.begin(), from.end());
  }
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
      if (i == 0 || ms[i - 1].role != "ipython") {
        start(t, "user");
        append(t, encode_plain("<tool_response>\n"));
      } else {
        append(t, encode_plain("\n<tool_response>\n"));
      }
      return;
    }
    start(t, m.role);
    if (m.role == "assistant" && m.ipython) {
      t.push_back(tool_token(tool_call_start_, "<tool_call>"));
      append(t, newline_);
    }
  }
  void footer(const std::vector<ft::Message>& ms, std::size_t i, std::vector<std::int64_t>& t) const {
    const auto& m = ms[i];
    if (m.role == "ipython") {
      append(t, encode_plain("\n</tool_response>"));
      if (i + 1 == ms.size() || ms[i + 1].role != "ipython") end(t);
      return;
    }
    if (m.role == "assistant" && m.ipython) {
      append(t, newline_);
      t.push_back(tool_token(tool_call_end_, "</tool_call>"));
    }
    if (m.role != "assistant" || i + 1 != ms.size()) end(t);
  }

  std::int64_t im_start_, im_end_;
  std::optional<std::int64_t> tool_call_start_, tool_call_end_;
  std::vector<std::int64_t> newline_;
};

}  // namespace

std::unique_ptr<ft::Tokenizer> make_qwen2_5_tokenizer(const std::string& path, const std::string& merges_file,
                                                      std::int64_t max_seq_len, Truncation truncation,
                                                      std::optional<std::vector<AddedToken>> special_tokens) {
  auto codec =
      load_qwen_codec(path, merges_file, special_tokens ? std::move(*special_tokens) : qwen2_5_special_tokens());
  return std::make_unique<Qwen2_5Tokenizer>(std::move(codec), max_seq_len, truncation);
}

}  // namespace ft_tok
