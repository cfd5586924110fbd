// torchtune.models.phi3.phi3_mini_tokenizer: Phi-3 mini's SentencePiece `.model` (Llama 2's 32k
// vocabulary; or the same model as a tokenizer.json) with Phi-3's special tokens above it
// (<|endoftext|> 32000 ... <|user|> 32010, or the added_tokens of special_tokens_path). Only the chat
// format emits them: text is encoded by SentencePiece alone, as torchtune does. The chat format:
//   <s><|system|>\n system <|end|>\n<|user|>\n user <|end|>\n<|assistant|>\n assistant <|end|>\n<|endoftext|>
// BOS starts the conversation and every turn after an EOS; each message's text is encoded without
// SentencePiece's leading word boundary; <|endoftext|> (EOS) follows an assistant message only with
// end tokens. Roles other than system, user and assistant are refused, as torchtune refuses them.
#include <ft/errors.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "leading_space_trim.h"
#include "tokenizer_factories.h"

namespace ft_tok {

namespace {

// torchtune's PHI3_SPECIAL_TOKENS.
std::vector<AddedToken> phi3_special_tokens() {
  return {{"<|endoftext|>", 32000},    {"<|assistant|>", 32001},    {"<|placeholder1|>", 32002},
          {"<|placeholder2|>", 32003}, {"<|placeholder3|>", 32004}, {"<|placeholder4|>", 32005},
          {"<|system|>", 32006},       {"<|end|>", 32007},          {"<|placeholder5|>", 32008},
          {"<|placeholder6|>", 32009}, {"<|user|>", 32010}};
}

class Phi3MiniTokenizer final : public ModelTokenizer {
 public:
  Phi3MiniTokenizer(std::shared_ptr<const TextCodec> codec, const std::vector<AddedToken>& special_tokens,
                    const std::string& special_tokens_source, std::int64_t max_seq_len, Truncation truncation)
      : ModelTokenizer(std::move(codec), {}, max_seq_len, truncation), trim_(*codec_) {
    for (const auto& t : special_tokens) {
      special_.emplace(t.content, t.id);
      special_ids_.insert(t.id);
    }
    auto special = [&](const std::string& name) {
      const auto it = special_.find(name);
      if (it == special_.end())
        throw ft::Error(special_tokens_source + " has no " + name + ", which Phi-3's chat format needs");
      return it->second;
    };
    ids_.bos = required_token("<s>");
    ids_.eos = special("<|endoftext|>");
    ids_.pad = ids_.eos;
    // torchtune's encode(add_eos=True) appends SentencePiece's own EOS, not <|endoftext|>.
    text_eos_ = required_token("</s>");
    user_ = special("<|user|>");
    assistant_ = special("<|assistant|>");
    system_ = special("<|system|>");
    end_ = special("<|end|>");
    newline_ = encode_plain("\n");
    vocab_size_ = codec_->vocab_size();
    for (const auto& [_, id] : special_) vocab_size_ = std::max(vocab_size_, id + 1);
  }

  std::vector<std::int64_t> encode(std::string_view text, bool add_bos, bool add_eos) const override {
    auto ids = ModelTokenizer::encode(text, add_bos, false);
    if (add_eos) ids.push_back(text_eos_);
    return ids;
  }

  // torchtune's decode(skip_special_tokens=True): the special tokens and the ids above the
  // SentencePiece vocabulary (Phi-3's unused 32011..32063) are left out.
  std::string decode(const std::vector<std::int64_t>& ids) const override {
    std::vector<std::int64_t> text_ids;
    for (auto id : ids)
      if (!special_ids_.count(id) && id < codec_->vocab_size()) text_ids.push_back(id);
    return codec_->decode(text_ids);
  }

  // Covers the special tokens, which sit above the SentencePiece vocabulary (torchtune reports the
  // SentencePiece model's 32000; the Phi-3 mini model embeds 32064).
  std::int64_t vocab_size() const override { return vocab_size_; }

  std::optional<std::int64_t> special_token(std::string_view text) const override {
    if (const auto it = special_.find(std::string(text)); it != special_.end()) return it->second;
    return codec_->token_id(text);
  }

  ft::TokenizedMessages tokenize_messages(const std::vector<ft::Message>& messages,
                                          bool add_end_tokens) const override {
    ft::TokenizedMessages out;
    auto append = [&](const std::vector<std::int64_t>& ids, bool masked) {
      out.tokens.insert(out.tokens.end(), ids.begin(), ids.end());
      out.mask.insert(out.mask.end(), ids.size(), masked);
    };
    bool start_of_turn = true, last_masked = false;
    for (const auto& m : messages) {
      if (start_of_turn) append({ids_.bos}, m.masked);
      append({role_token(m.role)}, m.masked);
      append(newline_, m.masked);
      std::string_view text = m.content;
      while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
      auto body = trim_.encode(*codec_, text, true);
      body.push_back(end_);
      body.insert(body.end(), newline_.begin(), newline_.end());
      append(body, m.masked);
      const bool end_of_turn = m.role == "assistant" && add_end_tokens;
      if (end_of_turn) append({ids_.eos}, m.masked);
      start_of_turn = end_of_turn;
      last_masked = m.masked;
      if (max_seq_len_ > 0 && static_cast<std::int64_t>(out.tokens.size()) >= max_seq_len_) break;
    }
    finish(out, add_end_tokens, last_masked, TruncateWhen::AtMaxSeqLen);
    return out;
  }

 private:
  std::int64_t role_token(const std::string& role) const {
    if (role == "user") return user_;
    if (role == "assistant") return assistant_;
    if (role == "system") return system_;
    throw ft::Error("Phi-3's chat format has no role \"" + role +
                    "\" (torchtune's Phi3MiniTokenizer renders system, user and assistant messages only)");
  }

  LeadingSpaceTrim trim_;
  std::unordered_map<std::string, std::int64_t> special_;
  std::unordered_set<std::int64_t> special_ids_;
  std::int64_t text_eos_, user_, assistant_, system_, end_;
  std::vector<std::int64_t> newline_;
  std::int64_t vocab_size_;
};

}  // namespace

std::unique_ptr<ft::Tokenizer> make_phi3_mini_tokenizer(const std::string& path, std::int64_t max_seq_len,
                                                        Truncation truncation,
                                                        std::optional<std::vector<AddedToken>> special_tokens,
                                                        const std::string& special_tokens_path) {
  const auto source = special_tokens ? special_tokens_path + " (special_tokens_path)" : "Phi-3's special tokens";
  return std::make_unique<Phi3MiniTokenizer>(load_sentencepiece_or_tokenizer_json(path),
                                             special_tokens ? *special_tokens : phi3_special_tokens(), source,
                                             max_seq_len, truncation);
}

}  // namespace ft_tok
