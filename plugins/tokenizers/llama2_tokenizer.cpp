// torchtune.models.llama2.llama2_tokenizer: SentencePiece `.model` (or HF `tokenizer.json`),
// BOS <s>, EOS </s>, pad 0, and Llama2ChatTemplate by default, rendered without special tokens
// (no_special_tokens_tokenizer.h):
//   <s>[INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST] assistant</s>
#include "no_special_tokens_tokenizer.h"
#include "tokenizer_factories.h"

namespace ft_tok {

std::unique_ptr<ft::Tokenizer> make_llama2_tokenizer(const std::string& path, std::int64_t max_seq_len,
                                                     Truncation truncation, PromptTemplate prompt_template) {
  return make_no_special_tokens_tokenizer(load_sentencepiece_or_tokenizer_json(path),
                                          {"<s>", "</s>", 0, prompt_template}, max_seq_len, truncation);
}

}  // namespace ft_tok
