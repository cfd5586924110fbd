// Prompts for `fthost generate --prompts FILE.jsonl`: one JSON object a line, holding the prompt
// as text ({"prompt": "..."}), as a conversation ({"messages": [{"role", "content"}, ...]},
// rendered with the tokenizer's chat format and an open assistant turn) or as token ids
// ({"tokens": [...]}), and optionally the answer it should get ({"expected": "..." or [ids]}).
#pragma once

#include <ft/tokenizer.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fthost {

struct Prompt {
  std::string shown;  // the prompt as it is printed (its text, its last message, or its ids)
  std::vector<std::int64_t> tokens;
  std::optional<std::string> expected_text;
  std::optional<std::vector<std::int64_t>> expected_tokens;
};

// Token ids as text: "1 32 11 3".
std::string ids_text(const std::vector<std::int64_t>& ids);

// The tokens of a text prompt: the chat format with one user turn when `chat`, else the text
// after BOS. Throws ft::Error when there is no tokenizer.
std::vector<std::int64_t> text_prompt_tokens(const ft::Tokenizer* tokenizer, const std::string& text, bool chat);

// The tokens of a conversation, ending in an open assistant turn for the model to complete.
std::vector<std::int64_t> conversation_tokens(const ft::Tokenizer& tokenizer, std::vector<ft::Message> messages);

// Reads every line of `path` (blank lines skipped). `tokenizer` may be null when every prompt
// is token ids. Throws ft::Error naming the file and line.
std::vector<Prompt> read_prompt_file(const std::string& path, const ft::Tokenizer* tokenizer, bool chat);

// Whether `answer` is the expected one: the same ids, or the same text apart from surrounding
// whitespace. nullopt when the prompt expects nothing.
std::optional<bool> answer_matches(const Prompt& prompt, const std::vector<std::int64_t>& answer,
                                   const ft::Tokenizer* tokenizer);

}  // namespace fthost
