// torchtune's tokenize_messages_no_special_tokens, the chat rendering of its Llama 2, Mistral and
// Gemma tokenizers: the pieces of each message (after the prompt template, prompt_template.h)
// encoded one after another with no special token but BOS at the start of each turn and EOS after
// each assistant message. Each piece's trailing spaces are dropped, and the pieces of a message
// that continues a turn lose SentencePiece's leading word boundary (leading_space_trim.h) unless
// the message before it ended with a space.
#pragma once

#include <ft/tokenizer.h>

#include <cstdint>
#include <memory>
#include <string>

#include "model_tokenizer.h"
#include "prompt_template.h"
#include "text_codec.h"

namespace ft_tok {

struct NoSpecialTokensFormat {
  std::string bos_token, eos_token;  // looked up in the vocabulary ("<s>", "<bos>", ...)
  std::int64_t pad_id = 0;
  PromptTemplate prompt_template = PromptTemplate::None;
};

std::unique_ptr<ft::Tokenizer> make_no_special_tokens_tokenizer(std::shared_ptr<const TextCodec> codec,
                                                                NoSpecialTokensFormat format, std::int64_t max_seq_len,
                                                                Truncation truncation);

}  // namespace ft_tok
