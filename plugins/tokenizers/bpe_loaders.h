// Builds a BpePipeline from the file formats models ship: Hugging Face `tokenizer.json`,
// tiktoken's ranks file (Llama 3 `tokenizer.model`), GPT-2-style `vocab.json` + `merges.txt`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bpe_pipeline.h"

namespace ft_tok {

// Every error names the file and the JSON path that is wrong or unsupported.
std::unique_ptr<BpePipeline> load_hf_tokenizer_json(const std::string& path);

// Base64 token + rank per line; `pattern` is the pre-tokenizer regex; `special_tokens` are
// added after the ranks (their text in the input stays ordinary text, as torchtune encodes).
std::unique_ptr<BpePipeline> load_tiktoken(const std::string& path, const std::string& pattern,
                                           std::vector<AddedToken> special_tokens);

// What a vocab.json + merges.txt tokenizer does to the text before splitting it: Qwen's
// normalizes to NFC (torchtune's Qwen2Tokenizer), Phi-4's cl100k vocabulary takes it as it is.
enum class Normalization { None, NFC };

// Byte-level BPE with `pattern`; special tokens are split out of the input text.
std::unique_ptr<BpePipeline> load_vocab_merges(const std::string& vocab_path, const std::string& merges_path,
                                               const std::string& pattern, Normalization normalization,
                                               std::vector<AddedToken> special_tokens);

// The file's contents; throws naming the path (and the working directory when relative).
std::string read_text_file(const std::string& path, const std::string& what);

}  // namespace ft_tok
