// A text <-> ids pipeline in Hugging Face `tokenizers`' order: added tokens are split out of the
// raw text, each remaining segment is normalized, pre-tokenized into words and BPE-encoded;
// decoding maps ids to token text and runs the decoder steps.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bpe_model.h"
#include "regex_splitter.h"
#include "unicode_normalize.h"

namespace ft_tok {

struct AddedToken {
  std::string content;
  TokenId id = 0;
  bool special = true;
  bool lstrip = false;  // swallow whitespace on its left
  bool rstrip = false;  // swallow whitespace on its right
};

struct NormalizerStep {
  enum class Kind { Unicode, Prepend, Replace } kind = Kind::Unicode;
  NormalForm form = NormalForm::NFC;
  std::string text;         // Prepend: the prefix; Replace: the pattern
  std::string replacement;  // Replace
};

struct PreTokenizerStep {
  enum class Kind { Split, ByteLevel, Metaspace } kind = Kind::Split;
  std::shared_ptr<const RegexSplitter> regex;  // Split; ByteLevel with use_regex
  bool keep_gaps = true;                       // Split: "Isolated" (true) or "Removed" (false)
  bool add_prefix_space = false;               // ByteLevel
  std::string replacement = "\xE2\x96\x81";    // Metaspace ("▁")
  enum class Prepend { Always, First, Never } prepend = Prepend::Always;  // Metaspace
  bool split = true;                                                      // Metaspace
};

struct DecoderStep {
  enum class Kind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace } kind = Kind::ByteLevel;
  std::string pattern, content;   // Replace: pattern -> content; Strip: content; Metaspace: replacement
  int start = 0, stop = 0;        // Strip
  bool strip_first_space = true;  // Metaspace: prepend_scheme is not "never"
};

struct PipelineSpec {
  std::vector<AddedToken> added_tokens;
  bool split_added_tokens = true;  // false: added-token text in the input is ordinary text (tiktoken)
  std::vector<NormalizerStep> normalizers;
  std::vector<PreTokenizerStep> pre_tokenizers;
  std::vector<DecoderStep> decoders;
};

class BpePipeline {
 public:
  BpePipeline(PipelineSpec spec, std::unique_ptr<BpeModel> model);

  std::vector<std::int64_t> encode(std::string_view text) const;
  std::string decode(const std::vector<std::int64_t>& ids) const;

  // One past the highest id of the model or any added token.
  std::int64_t vocab_size() const { return vocab_size_; }
  // An added token's id, else a model token's.
  std::optional<std::int64_t> token_id(std::string_view text) const;
  const std::vector<AddedToken>& added_tokens() const { return spec_.added_tokens; }

 private:
  void encode_segment(std::string_view segment, bool first_segment, std::vector<std::int64_t>& out) const;
  std::string normalize(std::string_view text) const;
  std::vector<std::string> pre_tokenize(std::string normalized, bool first_segment) const;

  PipelineSpec spec_;
  std::unique_ptr<BpeModel> model_;
  std::int64_t vocab_size_ = 0;
  std::unordered_map<std::string, TokenId> added_by_content_;
  std::unordered_map<TokenId, std::string> added_by_id_;
  std::vector<std::vector<std::size_t>> added_by_first_byte_;  // longest first
};

}  // namespace ft_tok
