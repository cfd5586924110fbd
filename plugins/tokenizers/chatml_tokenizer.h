// ChatML, the chat format the Qwen 2 and Qwen 2.5 tokenizers share:
//   (<|im_start|>role\n content <|im_end|>\n)* with the last assistant turn left open, then EOS
// (<|im_end|>). The families differ in how tool use is rendered and in their stop tokens.
#pragma once

#include <ft/tokenizer.h>

#include <cstdint>
#include <memory>

#include "model_tokenizer.h"
#include "text_codec.h"

namespace ft_tok {

// How tool calls and tool results (ipython messages) are rendered.
enum class ChatMlTools {
  // Qwen 2: an ipython message is its bare content, with no header or footer, and an assistant's
  // tool call is an ordinary assistant turn.
  Bare,
  // Qwen 2.5: a run of ipython messages is one user turn of <tool_response> blocks, and an
  // assistant's tool call is wrapped in <tool_call> ... </tool_call>.
  Tagged,
};

struct ChatMlFormat {
  ChatMlTools tools = ChatMlTools::Bare;
};

// A ChatML tokenizer over `codec`, whose vocabulary must hold <|im_start|>, <|im_end|> and
// <|endoftext|> (and, for Tagged tool messages that use them, <tool_call> and </tool_call>).
std::unique_ptr<ft::Tokenizer> make_chatml_tokenizer(std::shared_ptr<const TextCodec> codec, std::int64_t max_seq_len,
                                                     Truncation truncation, ChatMlFormat format);

}  // namespace ft_tok
