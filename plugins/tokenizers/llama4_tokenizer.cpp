// torchtune.models.llama4.llama4_transform, its text part: Meta's tiktoken `tokenizer.model` with
// Llama 4's pre-tokenizer and 2048 special tokens (200000..202047), and the Llama 4 chat format:
//   <|begin_of_text|> (<|header_start|>role<|header_end|>\n\n content <|eot|>)* <|end_of_text|>
// Each message is rendered as Meta's ChatFormat (llama_models) renders it, inside torchtune's
// framing (BOS, masks, EOS, truncation). Where torchtune's Llama4Tokenizer departs from Meta's
// format, the published format wins: content is not stripped, a "tool" message's header says
// "ipython", and ids 200016 and 200017 are <|python_start|> and <|python_end|>. A message with
// images (image_offsets) is torchtune's content list, as Hugging Face's chat template renders it
// too: each text piece between the images stripped, and an <|image|> placeholder for each image,
// which the multimodal dataset replaces by the image's tile grid (llama4_transform.cpp).
#include <ft/errors.h>

#include <cctype>
#include <optional>
#include <string_view>

#include "bpe_loaders.h"
#include "pretokenize_patterns.h"
#include "tiktoken_slices.h"
#include "tokenizer_factories.h"

namespace ft_tok {

namespace {

constexpr TokenId kFirstSpecialId = 200000;
constexpr int kSpecialTokenCount = 2048;

// Meta's special tokens in id order (llama_models.llama4.tokenizer): the named ones with their
// groups' reserved tokens between them, then <|reserved_special_token_N|> up to 202047.
std::vector<AddedToken> llama4_special_tokens() {
  std::vector<std::string> names = {"<|begin_of_text|>", "<|end_of_text|>",  "<|fim_prefix|>", "<|fim_middle|>",
                                    "<|fim_suffix|>",    "<|header_start|>", "<|header_end|>", "<|eom|>",
                                    "<|eot|>",           "<|step|>"};
  const auto reserved = [&names](const std::string& group, int from, int to) {
    for (int i = from; i < to; ++i)
      names.push_back("<|" + group + "reserved_special_token_" + std::to_string(i) + "|>");
  };
  const auto named = [&names](std::initializer_list<const char*> list) {
    names.insert(names.end(), list.begin(), list.end());
  };
  reserved("text_post_train_", 0, 6);
  named({"<|python_start|>", "<|python_end|>", "<|finetune_right_pad|>"});
  reserved("text_post_train_", 8, 69);
  named({"<|image_start|>", "<|image_end|>"});
  reserved("vision_", 0, 2);
  named({"<|tile_x_separator|>", "<|tile_y_separator|>"});
  reserved("vision_", 2, 6);
  named({"<|image|>"});
  reserved("vision_", 6, 7);
  named({"<|patch|>"});
  reserved("vision_", 7, 1048);
  reserved("reasoning_", 0, 8);
  named({"<|reasoning_thinking_start|>", "<|reasoning_thinking_end|>"});
  reserved("", 0, kSpecialTokenCount - static_cast<int>(names.size()));
  std::vector<AddedToken> tokens;
  for (std::size_t i = 0; i < names.size(); ++i)
    tokens.push_back({names[i], kFirstSpecialId + static_cast<TokenId>(i)});
  return tokens;
}

class Llama4Tokenizer final : public ModelTokenizer {
 public:
  // `source`: where the special tokens came from, for errors.
  Llama4Tokenizer(std::shared_ptr<const TextCodec> codec, const std::string& source, std::int64_t max_seq_len)
      : ModelTokenizer(std::move(codec), {}, max_seq_len, Truncation::Right) {
    const auto special = [&](const std::string& name) {
      if (auto id = codec_->token_id(name)) return *id;
      throw ft::Error(source + " has no special token " + name + ", which Llama 4's chat format needs");
    };
    ids_.bos = special("<|begin_of_text|>");
    ids_.eos = special("<|end_of_text|>");
    ids_.pad = special("<|finetune_right_pad|>");
    header_start_ = special("<|header_start|>");
    header_end_ = special("<|header_end|>");
    eot_ = special("<|eot|>");
    eom_ = special("<|eom|>");
    image_ = codec_->token_id("<|image|>");
    blank_line_ = encode_plain("\n\n");
    ipython_ = encode_plain("ipython");
  }

  ft::TokenizedMessages tokenize_messages(const std::vector<ft::Message>& messages,
                                          bool add_end_tokens) const override {
    ft::TokenizedMessages out;
    out.tokens.push_back(ids_.bos);
    out.mask.push_back(true);
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const auto& m = messages[i];
      std::vector<std::int64_t> t{header_start_};
      // Meta's Role.tool (OpenAI's "tool") is written "ipython", the role Llama 4 was tuned on.
      append(t, m.role == "tool" ? ipython_ : encode_plain(m.role));
      t.push_back(header_end_);
      append(t, blank_line_);
      append_content(t, m);
      // The last message stays open for generation; <|eom|> marks a message that does not end the
      // turn (a tool call, a tool's result), which the datasets flag as torchtune does.
      if (i + 1 < messages.size() || add_end_tokens) t.push_back(m.eot ? eot_ : eom_);
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

  std::vector<std::int64_t> stop_tokens() const override { return {ids_.eos, eom_, eot_}; }

 private:
  void append_content(std::vector<std::int64_t>& t, const ft::Message& m) const {
    if (m.image_offsets.empty()) {
      append(t, encode_plain(m.content));
      return;
    }
    append(t, encode_with_images(m, image_, "Llama 4"));
  }
  static void append(std::vector<std::int64_t>& to, const std::vector<std::int64_t>& from) {
    to.insert(to.end(), from.begin(), from.end());
  }
  std::int64_t header_start_, header_end_, eot_, eom_;
  std::optional<std::int64_t> image_;
  std::vector<std::int64_t> blank_line_, ipython_;
};

}  // namespace

std::unique_ptr<ft::Tokenizer> make_llama4_tokenizer(const std::string& path, std::int64_t max_seq_len,
                                                     std::optional<std::vector<AddedToken>> special_tokens,
                                                     const std::string& special_tokens_path) {
  if (looks_like_json(path))
    throw ft::Error(path +
                    ": is JSON, but Llama 4's `path` is Meta's tiktoken tokenizer.model (base64 ranks); give a "
                    "tokenizer.json as special_tokens_path, which reads its added_tokens");
  const auto source = special_tokens ? special_tokens_path + " (special_tokens_path)" : "Llama 4's special tokens";
  auto codec = std::make_shared<SlicedTiktokenCodec>(
      load_tiktoken(path, kLlama4Pattern, special_tokens ? std::move(*special_tokens) : llama4_special_tokens()));
  return std::make_unique<Llama4Tokenizer>(std::move(codec), source, max_seq_len);
}

}  // namespace ft_tok
