// Splits text with a pre-tokenizer regex (PCRE2, JIT-compiled, Unicode properties on): every
// match is a piece and so is any text between matches (HF `Split` with behavior "Isolated").
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ft_tok {

class RegexSplitter {
 public:
  // Throws ft::Error quoting the pattern and PCRE2's message when it does not compile.
  explicit RegexSplitter(const std::string& pattern);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  void split(std::string_view text, std::vector<std::string_view>& pieces) const;
  // Only the matches (HF `Split` with behavior "Removed" keeps the gaps out).
  void matches(std::string_view text, std::vector<std::string_view>& pieces, bool keep_gaps) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
  std::string pattern_;
};

// GPT-2's pattern, used by the ByteLevel pre-tokenizer when `use_regex` is true.
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace ft_tok
