// tiktoken's ranks file (Llama 3's original `tokenizer.model`): "<base64 token> <rank>" a line.
#include <ft/errors.h>

#include <array>
#include <sstream>

#include "bpe_loaders.h"

namespace ft_tok {

namespace {

bool base64_decode(std::string_view in, std::string& out) {
  static const std::array<int, 256> table = [] {
    std::array<int, 256> t{};
    t.fill(-1);
    const char* chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(chars[i])] = i;
    return t;
  }();
  out.clear();
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    const int v = table[static_cast<unsigned char>(c)];
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return !out.empty();
}

}  // namespace

std::unique_ptr<BpePipeline> load_tiktoken(const std::string& path, const std::string& pattern,
                                           std::vector<AddedToken> special_tokens) {
  std::istringstream in(read_text_file(path, "tiktoken ranks file"));
  std::unordered_map<std::string, TokenId> vocab;
  std::string line, bytes;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto space = line.find(' ');
    const auto where = path + ":" + std::to_string(line_no) + ": ";
    if (space == std::string::npos) throw ft::Error(where + "expected \"<base64 token> <rank>\", got \"" + line + "\"");
    if (!base64_decode(std::string_view(line).substr(0, space), bytes)) throw ft::Error(where + "token is not base64");
    TokenId rank = 0;
    try {
      rank = static_cast<TokenId>(std::stol(line.substr(space + 1)));
    } catch (const std::exception&) {
      throw ft::Error(where + "rank is not an integer");
    }
    if (!vocab.emplace(bytes, rank).second) throw ft::Error(where + "token appears twice");
  }
  if (vocab.empty()) throw ft::Error(path + ": tiktoken ranks file has no tokens");
  BpeOptions options;
  options.alphabet = BpeOptions::Alphabet::Bytes;
  options.ignore_merges = true;
  options.ranks_are_ids = true;
  PipelineSpec spec;
  spec.added_tokens = std::move(special_tokens);
  spec.split_added_tokens = false;
  PreTokenizerStep split;
  split.regex = std::make_shared<RegexSplitter>(pattern);
  spec.pre_tokenizers.push_back(std::move(split));
  spec.decoders.push_back({});
  try {
    return std::make_unique<BpePipeline>(
        std::move(spec),
        std::make_unique<BpeModel>(std::move(vocab), std::vector<std::pair<std::string, std::string>>{}, options));
  } catch (const ft::Error& e) {
    throw ft::Error(path + ": " + e.what());
  }
}

}  // namespace ft_tok
