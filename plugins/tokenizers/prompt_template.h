// The prompt templates of torchtune's SentencePiece tokenizers (Llama 2, Mistral, Gemma): text a
// template puts around each message before tokenize_messages encodes it, chosen by the tokenizer's
// `prompt_template` key. torchtune accepts any PromptTemplate class; fthost renders these two.
#pragma once

#include <ft/tokenizer.h>

#include <string>
#include <vector>

namespace ft_tok {

enum class PromptTemplate {
  None,
  // torchtune.models.llama2.Llama2ChatTemplate: [INST] user [/INST], the system message in
  // <<SYS>> ... <</SYS>> inside every later user message.
  Llama2Chat,
  // torchtune.models.mistral.MistralChatTemplate: [INST] user [/INST]; no system message.
  MistralChat,
};

inline constexpr const char* kLlama2ChatTemplate = "torchtune.models.llama2.Llama2ChatTemplate";
inline constexpr const char* kMistralChatTemplate = "torchtune.models.mistral.MistralChatTemplate";

// A `prompt_template` value: "" for none, or one of the class paths above; throws naming them.
PromptTemplate parse_prompt_template(const std::string& value);

// A message after the template: its text pieces, each encoded on its own as torchtune encodes a
// message's content items.
struct TemplatedMessage {
  std::string role;
  std::vector<std::string> pieces;
  bool masked = false;
};

// torchtune's PromptTemplate.__call__; throws where torchtune's template raises.
std::vector<TemplatedMessage> apply_prompt_template(PromptTemplate t, const std::vector<ft::Message>& messages);

}  // namespace ft_tok
