#include "prompt_template.h"

#include <ft/errors.h>

namespace ft_tok {

PromptTemplate parse_prompt_template(const std::string& value) {
  if (value.empty()) return PromptTemplate::None;
  if (value == kLlama2ChatTemplate) return PromptTemplate::Llama2Chat;
  if (value == kMistralChatTemplate) return PromptTemplate::MistralChat;
  throw ft::Error("expected \"\" (no template), \"" + std::string(kLlama2ChatTemplate) + "\" or \"" +
                  kMistralChatTemplate + "\", got \"" + value + "\"");
}

std::vector<TemplatedMessage> apply_prompt_template(PromptTemplate t, const std::vector<ft::Message>& messages) {
  std::vector<TemplatedMessage> out;
  std::vector<std::string> system;  // Llama2ChatTemplate: kept for every later user message, as torchtune does
  for (const auto& m : messages) {
    TemplatedMessage tm{m.role, {}, m.masked};
    switch (t) {
      case PromptTemplate::None: tm.pieces = {m.content}; break;
      case PromptTemplate::Llama2Chat:
        if (m.role == "system") {
          system = {"<<SYS>>\n", m.content, "\n<</SYS>>\n\n"};
          continue;
        }
        if (m.role == "user") {
          tm.pieces.push_back("[INST] ");
          tm.pieces.insert(tm.pieces.end(), system.begin(), system.end());
          tm.pieces.push_back(m.content);
          tm.pieces.push_back(" [/INST] ");
        } else {
          tm.pieces = {m.content};
        }
        break;
      case PromptTemplate::MistralChat:
        if (m.role == "system")
          throw ft::Error(
              "a system message in a conversation for MistralChatTemplate, which has none (as torchtune's "
              "raises); set the tokenizer's prompt_template = \"\" or drop the system message");
        // Every other role is wrapped, the assistant's and ipython's in empty text (whose pieces
        // still count: the last one decides whether the next message's leading space is trimmed).
        if (m.role == "user")
          tm.pieces = {"[INST] ", m.content, " [/INST] "};
        else
          tm.pieces = {"", m.content, ""};
        break;
    }
    out.push_back(std::move(tm));
  }
  return out;
}

}  // namespace ft_tok
