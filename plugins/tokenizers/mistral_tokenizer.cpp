// torchtune.models.mistral.mistral_tokenizer: Mistral 7B's SentencePiece `.model` (or HF
// `tokenizer.json`), BOS <s>, EOS </s>, pad 0 (the model has no pad token; torchtune sets 0), and
// MistralChatTemplate by default, rendered without special tokens (no_special_tokens_tokenizer.h):
//   <s>[INST] user [/INST] assistant</s>
// It is Llama 2's rendering with Mistral's template, which refuses system messages.
#include "no_special_tokens_tokenizer.h"
#include "tokenizer_factories.h"

namespace ft_tok {

std::unique_ptr<ft::Tokenizer> make_mistral_tokenizer(const std::string& path, std::int64_t max_seq_len,
                                                      Truncation truncation, PromptTemplate prompt_template) {
  return make_no_special_tokens_tokenizer(load_sentencepiece_or_tokenizer_json(path),
                                          {"<s>", "</s>", 0, prompt_template}, max_seq_len, truncation);
}

}  // namespace ft_tok
