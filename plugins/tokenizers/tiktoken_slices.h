// How Meta's tiktoken tokenizers (llama_models' Tokenizer, torchtune's TikTokenBaseTokenizer) cut
// text before encoding it: into slices of at most 400,000 characters, each cut again wherever a
// run of whitespace, or of anything else, would pass 25,000 characters. tiktoken runs the
// pre-tokenizer regex inside each slice, so a cut that falls inside a regex piece changes the ids.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "text_codec.h"

namespace ft_tok {

// The slices in order; characters are code points and whitespace is Python's str.isspace, as in
// Meta's code. Empty text has no slices.
std::vector<std::string_view> tiktoken_slices(std::string_view text);

// A tiktoken BPE pipeline that encodes each slice on its own, as Meta's encode does.
class SlicedTiktokenCodec final : public TextCodec {
 public:
  explicit SlicedTiktokenCodec(std::unique_ptr<BpePipeline> pipeline) : pipeline_(std::move(pipeline)) {}
  std::vector<std::int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<std::int64_t>& ids) const override { return pipeline_->decode(ids); }
  std::int64_t vocab_size() const override { return pipeline_->vocab_size(); }
  std::optional<std::int64_t> token_id(std::string_view text) const override { return pipeline_->token_id(text); }

 private:
  std::unique_ptr<BpePipeline> pipeline_;
};

}  // namespace ft_tok
