// torchtune.models.qwen2_5.qwen2_5_tokenizer: `vocab.json` + `merges.txt` (or a `tokenizer.json`),
// Qwen 2.5 special tokens, and ChatML (chatml_tokenizer.h) with tool calls in <tool_call> and tool
// results in <tool_response>.
#include "chatml_tokenizer.h"
#include "qwen_codec.h"
#include "tokenizer_factories.h"

namespace ft_tok {

std::vector<AddedToken> qwen2_5_special_tokens() {
  const char* names[] = {"<|endoftext|>",      "<|im_start|>",     "<|im_end|>",     "<|object_ref_start|>",
                         "<|object_ref_end|>", "<|box_start|>",    "<|box_end|>",    "<|quad_start|>",
                         "<|quad_end|>",       "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
                         "<|image_pad|>",      "<|video_pad|>",    "<tool_call>",    "</tool_call>",
                         "<|fim_prefix|>",     "<|fim_middle|>",   "<|fim_suffix|>", "<|fim_pad|>",
                         "<|repo_name|>",      "<|file_sep|>"};
  std::vector<AddedToken> t;
  TokenId id = 151643;
  for (const char* n : names) t.push_back({n, id++});
  return t;
}

std::unique_ptr<ft::Tokenizer> make_qwen2_5_tokenizer(const std::string& path, const std::string& merges_file,
                                                      std::int64_t max_seq_len, Truncation truncation,
                                                      std::optional<std::vector<AddedToken>> special_tokens) {
  auto codec =
      load_qwen_codec(path, merges_file, special_tokens ? std::move(*special_tokens) : qwen2_5_special_tokens());
  ChatMlFormat format;
  format.tools = ChatMlTools::Tagged;
  return make_chatml_tokenizer(std::move(codec), max_seq_len, truncation, format);
}

}  // namespace ft_tok
