// torchtune.models.qwen3.qwen3_tokenizer (torchtune's main branch; 0.6.1 has no Qwen 3): the Qwen
// byte-level BPE with Qwen 2.5's special tokens and four more (<tool_response> 151665,
// </tool_response> 151666, <think> 151667, </think> 151668), and Qwen 2.5's ChatML
// (chatml_tokenizer.h): torchtune's Qwen3Tokenizer is its Qwen2_5Tokenizer with those tokens. It
// has no chat markup of its own for <think>: reasoning is text in the assistant's content.
// truncation_type is honoured; torchtune main's Qwen3Tokenizer takes it but does not pass it on
// (it always keeps the start).
#include "chatml_tokenizer.h"
#include "qwen_codec.h"
#include "tokenizer_factories.h"

namespace ft_tok {

namespace {

std::vector<AddedToken> qwen3_special_tokens() {
  auto t = qwen2_5_special_tokens();
  for (const auto& [name, id] : std::initializer_list<std::pair<const char*, TokenId>>{
           {"<tool_response>", 151665}, {"</tool_response>", 151666}, {"<think>", 151667}, {"</think>", 151668}})
    t.push_back({name, id});
  return t;
}

}  // namespace

std::unique_ptr<ft::Tokenizer> make_qwen3_tokenizer(const std::string& path, const std::string& merges_file,
                                                    std::int64_t max_seq_len, Truncation truncation,
                                                    std::optional<std::vector<AddedToken>> special_tokens) {
  auto codec = load_qwen_codec(path, merges_file, special_tokens ? std::move(*special_tokens) : qwen3_special_tokens());
  ChatMlFormat format;
  format.tools = ChatMlTools::Tagged;
  return make_chatml_tokenizer(std::move(codec), max_seq_len, truncation, format);
}

}  // namespace ft_tok
