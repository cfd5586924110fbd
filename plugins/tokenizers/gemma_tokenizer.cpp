// torchtune.models.gemma.gemma_tokenizer (Gemma and Gemma 2): Gemma's SentencePiece `.model` (or HF
// `tokenizer.json`), BOS <bos> (2), EOS <eos> (1), pad 0 (<pad>), and no prompt template by
// default: messages are encoded back to back (no_special_tokens_tokenizer.h), BOS at each turn's
// start and EOS after each assistant message. Gemma's own <start_of_turn> chat markup is not
// torchtune's format and is not added.
#include "no_special_tokens_tokenizer.h"
#include "tokenizer_factories.h"

namespace ft_tok {

std::unique_ptr<ft::Tokenizer> make_gemma_tokenizer(const std::string& path, std::int64_t max_seq_len,
                                                    Truncation truncation, PromptTemplate prompt_template) {
  return make_no_special_tokens_tokenizer(load_sentencepiece_or_tokenizer_json(path),
                                          {"<bos>", "<eos>", 0, prompt_template}, max_seq_len, truncation);
}

}  // namespace ft_tok
