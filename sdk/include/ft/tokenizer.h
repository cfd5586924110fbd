// Tokenizer interface (`torchtune.models.*_tokenizer`). Datasets receive one through their Args.
#pragma once

#include <ft/errors.h>
#include <ft/kind.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ft {

class ImageTransform;

// One turn of a conversation, as torchtune's `Message`: text content only.
struct Message {
  Message() = default;
  Message(std::string role_, std::string content_, bool masked_ = false, bool ipython_ = false, bool eot_ = true)
      : role(std::move(role_)), content(std::move(content_)), masked(masked_), ipython(ipython_), eot(eot_) {}
  std::string role;  // "system", "user", "assistant", "ipython", "tool"
  std::string content;
  bool masked = false;  // true: its tokens get no labels (the prompt when train_on_input = false)
  bool ipython = false;
  bool eot = true;  // ends the turn (Llama 3 <|eot_id|>), else <|eom_id|>
  // Multimodal messages: byte offsets into `content`, ascending, where an image sits (torchtune's
  // content list [text, image, text, ...]: the text pieces between them, each stripped, and the
  // model's image token for each offset). Empty for text.
  std::vector<std::size_t> image_offsets;
};

// A rendered conversation: mask[i] true = token i is not trained on.
struct TokenizedMessages {
  std::vector<std::int64_t> tokens;
  std::vector<bool> mask;
  // The conversation was longer than the tokenizer's max_seq_len and was cut to it.
  bool truncated = false;
};

class Tokenizer {
 public:
  static constexpr Kind kind = Kind::Tokenizer;
  struct Args {};

  virtual ~Tokenizer() = default;
  virtual std::vector<std::int64_t> encode(std::string_view text, bool add_bos, bool add_eos) const = 0;
  virtual std::string decode(const std::vector<std::int64_t>& ids) const = 0;
  virtual std::int64_t vocab_size() const = 0;
  virtual std::int64_t bos_id() const = 0;
  virtual std::int64_t eos_id() const = 0;
  virtual std::int64_t pad_id() const = 0;
  // Id of a special token such as "<|start_header_id|>", if the vocabulary has it.
  virtual std::optional<std::int64_t> special_token(std::string_view text) const = 0;

  // Added with the text datasets (ABI 1.0 additions, appended so existing vtable slots keep
  // their places). torchtune puts the model family's chat format in the tokenizer
  // (`tokenize_messages`); datasets render instructions and chats through it.
  //
  // The tokenizer's `max_seq_len` (0: none): tokenize_messages truncates to it, and packed
  // datasets use it as the pack length, as in torchtune.
  virtual std::int64_t max_seq_len() const { return 0; }
  // The conversation in the model's chat format (Llama 3 headers, ChatML, Llama 2 [INST]),
  // with torchtune's rules for BOS/EOS and their masks; add_end_tokens = false for generation.
  virtual TokenizedMessages tokenize_messages(const std::vector<Message>& messages, bool add_end_tokens = true) const {
    (void)messages;
    (void)add_end_tokens;
    throw Error("this tokenizer has no chat format (tokenize_messages)");
  }

  // The ids that end a generated answer (torchtune's `stop_tokens`): EOS, and the end-of-turn
  // tokens of the family's chat format (Llama 3 <|eot_id|>, <|eom_id|>; ChatML <|im_end|>).
  virtual std::vector<std::int64_t> stop_tokens() const { return {eos_id()}; }
  // Added with the vision models (appended, so existing vtable slots keep their places). A model
  // transform that takes images too (torchtune's llama3_2_vision_transform) gives its image half;
  // nullptr: text only.
  virtual const ImageTransform* image_transform() const { return nullptr; }
};

}  // namespace ft
