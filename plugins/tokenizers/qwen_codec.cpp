#include "qwen_codec.h"

#include <ft/errors.h>

#include "bpe_loaders.h"
#include "pretokenize_patterns.h"

namespace ft_tok {

std::shared_ptr<const TextCodec> load_qwen_codec(const std::string& path, const std::string& merges_file,
                                                 std::vector<AddedToken> special_tokens) {
  const bool named_vocab_json = path.size() >= 10 && path.compare(path.size() - 10, 10, "vocab.json") == 0;
  if (looks_like_json(path) && merges_file.empty() && !named_vocab_json) {
    // A tokenizer.json (a vocab.json also starts with '{' but needs merges_file).
    return std::make_shared<BpeCodec>(load_hf_tokenizer_json(path));
  }
  if (merges_file.empty())
    throw ft::Error("merges_file is required with path = \"" + path +
                    "\" (a vocab.json); or set path to a tokenizer.json");
  return std::make_shared<BpeCodec>(
      load_vocab_merges(path, merges_file, kQwen2Pattern, Normalization::NFC, std::move(special_tokens)));
}

}  // namespace ft_tok
