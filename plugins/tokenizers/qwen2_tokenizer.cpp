// torchtune.models.qwen2.qwen2_tokenizer: the Qwen byte-level BPE with Qwen 2's three special
// tokens (<|endoftext|> 151643, <|im_start|> 151644, <|im_end|> 151645; Qwen 2.5 adds tool, vision
// and fill-in-the-middle tokens after them) and ChatML (chatml_tokenizer.h). Unlike Qwen 2.5,
// ipython (tool result) messages get no header or footer at all.
#include "chatml_tokenizer.h"
#include "qwen_codec.h"
#include "tokenizer_factories.h"

namespace ft_tok {

namespace {

std::vector<AddedToken> qwen2_special_tokens() {
  return {{"<|endoftext|>", 151643}, {"<|im_start|>", 151644}, {"<|im_end|>", 151645}};
}

}  // namespace

std::unique_ptr<ft::Tokenizer> make_qwen2_tokenizer(const std::string& path, const std::string& merges_file,
                                                    std::int64_t max_seq_len, Truncation truncation,
                                                    std::optional<std::vector<AddedToken>> special_tokens) {
  auto codec = load_qwen_codec(path, merges_file, special_tokens ? std::move(*special_tokens) : qwen2_special_tokens());
  ChatMlFormat format;
  format.tools = ChatMlTools::Bare;
  return make_chatml_tokenizer(std::move(codec), max_seq_len, truncation, format);
}

}  // namespace ft_tok
