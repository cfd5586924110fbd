// The BPE model: a vocabulary, merge ranks, and the merge loop that turns one pre-tokenized
// word into ids, as Hugging Face's `tokenizers` BPE (and tiktoken, whose ranks are its ids).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ft_tok {

using TokenId = std::int32_t;

struct BpeOptions {
  // Bytes: tokens are raw byte strings and a word starts as one symbol per byte (byte-level
  // BPE: GPT-2, Llama 3, Qwen). Characters: tokens are UTF-8 text and a word starts as one symbol
  // per character, unknown characters falling back to <0xNN> byte tokens or the unk token
  // (SentencePiece-style BPE: Llama 2, Mistral).
  enum class Alphabet { Bytes, Characters } alphabet = Alphabet::Bytes;
  // A word that is itself a token is emitted whole, without merging (HF `ignore_merges`, tiktoken).
  bool ignore_merges = false;
  bool byte_fallback = false;
  std::optional<TokenId> unk_id;
  bool fuse_unk = false;
  // Merge ranks are the ids of the merged tokens (tiktoken's `mergeable_ranks`): any two
  // adjacent symbols whose concatenation is a token may merge, lowest id first.
  bool ranks_are_ids = false;
};

class BpeModel {
 public:
  // `vocab`: token text (raw bytes for the Bytes alphabet) -> id. `merges`: pairs in rank order.
  BpeModel(std::unordered_map<std::string, TokenId> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options);

  // Appends the ids of one word (already normalized and pre-tokenized).
  void encode_word(std::string_view word, std::vector<std::int64_t>& out) const;

  std::optional<TokenId> token_to_id(std::string_view token) const;
  // The token's text, or nullptr for an id the model does not have.
  const std::string* id_to_token(std::int64_t id) const;
  TokenId max_id() const { return static_cast<TokenId>(id_to_token_.size()) - 1; }
  const BpeOptions& options() const { return options_; }

 private:
  struct Merge {
    TokenId rank;
    TokenId merged;
  };
  std::optional<Merge> find_merge(TokenId left, TokenId right) const;
  void initial_symbols(std::string_view word, std::vector<TokenId>& symbols) const;
  void merge_symbols(std::vector<TokenId>& symbols) const;

  BpeOptions options_;
  std::unordered_map<std::string, TokenId> vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_id_;
  std::unordered_map<std::uint64_t, Merge> merges_;
  std::vector<TokenId> byte_ids_;      // Bytes alphabet: id of each single byte, -1 if absent
  std::vector<TokenId> fallback_ids_;  // Characters alphabet: id of <0xNN>, -1 if absent

  // Words repeat a lot in real text; the merge loop's result is cached per word.
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<TokenId>> cache_;
};

}  // namespace ft_tok
