// What the model tokenizers need from a tokenizer implementation: text <-> ids without any
// special tokens added, and lookups of special tokens by their text.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bpe_pipeline.h"

namespace ft_tok {

class TextCodec {
 public:
  virtual ~TextCodec() = default;
  virtual std::vector<std::int64_t> encode(std::string_view text) const = 0;
  virtual std::string decode(const std::vector<std::int64_t>& ids) const = 0;
  virtual std::int64_t vocab_size() const = 0;
  virtual std::optional<std::int64_t> token_id(std::string_view text) const = 0;
};

class BpeCodec final : public TextCodec {
 public:
  explicit BpeCodec(std::unique_ptr<BpePipeline> pipeline) : pipeline_(std::move(pipeline)) {}
  std::vector<std::int64_t> encode(std::string_view text) const override { return pipeline_->encode(text); }
  std::string decode(const std::vector<std::int64_t>& ids) const override { return pipeline_->decode(ids); }
  std::int64_t vocab_size() const override { return pipeline_->vocab_size(); }
  std::optional<std::int64_t> token_id(std::string_view text) const override { return pipeline_->token_id(text); }

 private:
  std::unique_ptr<BpePipeline> pipeline_;
};

// SentencePiece `.model` files through libsentencepiece (Llama 2's original tokenizer).
std::unique_ptr<TextCodec> load_sentencepiece(const std::string& path);

// True when the file is JSON (a tokenizer.json) rather than a binary or ranks model file.
bool looks_like_json(const std::string& path);

// A SentencePiece `.model`, or the same model converted to a Hugging Face tokenizer.json.
std::shared_ptr<const TextCodec> load_sentencepiece_or_tokenizer_json(const std::string& path);

}  // namespace ft_tok
