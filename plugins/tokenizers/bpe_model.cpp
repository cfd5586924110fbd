#include "bpe_model.h"

#include <ft/errors.h>

#include <algorithm>
#include <cstdio>
#include <queue>

#include "utf8.h"

namespace ft_tok {

namespace {
constexpr std::size_t kMaxCachedWordBytes = 256;
constexpr std::size_t kMaxCacheEntries = 200000;

std::uint64_t pair_key(TokenId left, TokenId right) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
}
}  // namespace

BpeModel::BpeModel(std::unordered_map<std::string, TokenId> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options)
    : options_(options), vocab_(std::move(vocab)) {
  TokenId max_id = -1;
  for (const auto& [text, id] : vocab_) {
    if (id < 0) throw ft::Error("vocabulary token \"" + text + "\" has a negative id");
    max_id = std::max(max_id, id);
  }
  id_to_token_.resize(static_cast<std::size_t>(max_id) + 1);
  has_id_.assign(id_to_token_.size(), false);
  for (const auto& [text, id] : vocab_) {
    id_to_token_[id] = text;
    has_id_[id] = true;
  }
  merges_.reserve(merges.size());
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    auto ia = vocab_.find(a), ib = vocab_.find(b), iab = vocab_.find(a + b);
    if (ia == vocab_.end() || ib == vocab_.end() || iab == vocab_.end())
      throw ft::Error("merge " + std::to_string(rank) + " (\"" + a + "\" \"" + b +
                      "\") names a token that is not in the vocabulary");
    merges_.emplace(pair_key(ia->second, ib->second), Merge{static_cast<TokenId>(rank), iab->second});
  }
  if (options_.alphabet == BpeOptions::Alphabet::Bytes) {
    byte_ids_.assign(256, -1);
    for (int b = 0; b < 256; ++b)
      if (auto it = vocab_.find(std::string(1, static_cast<char>(b))); it != vocab_.end()) byte_ids_[b] = it->second;
  } else {
    fallback_ids_.assign(256, -1);
    char name[8];
    for (int b = 0; b < 256; ++b) {
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      if (auto it = vocab_.find(name); it != vocab_.end()) fallback_ids_[b] = it->second;
    }
  }
}

std::optional<TokenId> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(std::int64_t id) const {
  if (id < 0 || id >= static_cast<std::int64_t>(id_to_token_.size()) || !has_id_[id]) return nullptr;
  return &id_to_token_[id];
}

std::optional<BpeModel::Merge> BpeModel::find_merge(TokenId left, TokenId right) const {
  if (options_.ranks_are_ids) {
    auto it = vocab_.find(id_to_token_[left] + id_to_token_[right]);
    if (it == vocab_.end()) return std::nullopt;
    return Merge{it->second, it->second};
  }
  auto it = merges_.find(pair_key(left, right));
  if (it == merges_.end()) return std::nullopt;
  return it->second;
}

void BpeModel::initial_symbols(std::string_view word, std::vector<TokenId>& symbols) const {
  if (options_.alphabet == BpeOptions::Alphabet::Bytes) {
    for (unsigned char b : word) {
      if (byte_ids_[b] < 0) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", b);
        throw ft::Error(std::string("byte-level vocabulary has no token for byte ") + hex);
      }
      symbols.push_back(byte_ids_[b]);
    }
    return;
  }
  bool previous_unk = false;
  for (std::size_t i = 0; i < word.size();) {
    const std::size_t start = i;
    next_code_point(word, i);
    const std::string_view ch = word.substr(start, i - start);
    if (auto it = vocab_.find(std::string(ch)); it != vocab_.end()) {
      symbols.push_back(it->second);
      previous_unk = false;
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (unsigned char b : ch) all = all && fallback_ids_[b] >= 0;
      if (all) {
        for (unsigned char b : ch) symbols.push_back(fallback_ids_[b]);
        previous_unk = false;
        continue;
      }
    }
    if (!options_.unk_id)
      throw ft::Error("the vocabulary has no token for \"" + std::string(ch) + "\" and no unk_token or byte fallback");
    if (!(options_.fuse_unk && previous_unk)) symbols.push_back(*options_.unk_id);
    previous_unk = true;
  }
}

// Lowest rank first, leftmost on ties: the order of HF's merge queue.
void BpeModel::merge_symbols(std::vector<TokenId>& symbols) const {
  const auto n = static_cast<std::int32_t>(symbols.size());
  if (n < 2) return;
  std::vector<std::int32_t> prev(n), next(n);
  for (std::int32_t i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    TokenId rank;
    std::int32_t left;
    TokenId left_id, right_id, merged;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto push = [&](std::int32_t left) {
    if (left < 0 || next[left] < 0) return;
    const std::int32_t right = next[left];
    if (auto m = find_merge(symbols[left], symbols[right]))
      queue.push({m->rank, left, symbols[left], symbols[right], m->merged});
  };
  for (std::int32_t i = 0; i + 1 < n; ++i) push(i);
  std::vector<bool> alive(n, true);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    if (!alive[c.left] || symbols[c.left] != c.left_id) continue;
    const std::int32_t right = next[c.left];
    if (right < 0 || symbols[right] != c.right_id) continue;
    symbols[c.left] = c.merged;
    alive[right] = false;
    next[c.left] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.left;
    push(prev[c.left]);
    push(c.left);
  }
  std::size_t w = 0;
  for (std::int32_t i = 0; i < n; ++i)
    if (alive[i]) symbols[w++] = symbols[i];
  symbols.resize(w);
}

void BpeModel::encode_word(std::string_view word, std::vector<std::int64_t>& out) const {
  if (word.empty()) return;
  if (options_.ignore_merges)
    if (auto it = vocab_.find(std::string(word)); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  std::string key;
  if (cacheable) {
    key.assign(word);
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<TokenId> symbols;
  symbols.reserve(word.size());
  initial_symbols(word, symbols);
  merge_symbols(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();
    cache_.emplace(std::move(key), std::move(symbols));
  }
}

}  // namespace ft_tok
