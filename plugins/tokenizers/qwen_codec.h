// The byte-level BPE that the Qwen 2, Qwen 2.5 and Qwen 3 tokenizers share: torchtune's `vocab.json` +
// `merges.txt` pair with the family's special tokens, or a Hugging Face `tokenizer.json` with its own.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bpe_pipeline.h"
#include "text_codec.h"

namespace ft_tok {

// `path` is a tokenizer.json when merges_file is empty and the file is not named vocab.json;
// then `special_tokens` is unused (the file's added_tokens are the special tokens).
std::shared_ptr<const TextCodec> load_qwen_codec(const std::string& path, const std::string& merges_file,
                                                 std::vector<AddedToken> special_tokens);

// torchtune's QWEN2_5_SPECIAL_TOKENS (151643..151664), which Qwen 3's extend.
std::vector<AddedToken> qwen2_5_special_tokens();

}  // namespace ft_tok
