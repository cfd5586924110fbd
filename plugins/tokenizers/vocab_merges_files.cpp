// GPT-2-style `vocab.json` (byte-level spelled token -> id) and `merges.txt` ("left right" a
// line, rank order, an optional "#version" first line), as torchtune's Qwen2Tokenizer and Phi-4's
// tokenizer read them.
#include <ft/errors.h>

#include <nlohmann/json.hpp>

#include <sstream>

#include "bpe_loaders.h"
#include "utf8.h"

namespace ft_tok {

std::unique_ptr<BpePipeline> load_vocab_merges(const std::string& vocab_path, const std::string& merges_path,
                                               const std::string& pattern, Normalization normalization,
                                               std::vector<AddedToken> special_tokens) {
  const ByteLevelAlphabet alphabet;
  auto raw = [&](const std::string& spelled) {
    std::string out;
    return alphabet.decode(spelled, out) ? out : spelled;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(vocab_path, "vocab.json"));
  } catch (const nlohmann::json::exception& e) {
    throw ft::Error(vocab_path + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw ft::Error(vocab_path + ": expected an object of token -> id");
  std::unordered_map<std::string, TokenId> vocab;
  for (const auto& [token, id] : j.items()) {
    if (!id.is_number_integer()) throw ft::Error(vocab_path + ": id of \"" + token + "\" is not an integer");
    vocab.emplace(raw(token), id.get<TokenId>());
  }
  std::istringstream in(read_text_file(merges_path, "merges file"));
  std::vector<std::pair<std::string, std::string>> merges;
  std::string line;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n' || line.back() == ' ')) line.pop_back();
    if ((line_no == 1 && line.rfind("#version:", 0) == 0) || line.empty()) continue;
    const auto space = line.find(' ');
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
      throw ft::Error(merges_path + ":" + std::to_string(line_no) + ": expected \"left right\", got \"" + line + "\"");
    merges.emplace_back(raw(line.substr(0, space)), raw(line.substr(space + 1)));
  }
  PipelineSpec spec;
  spec.added_tokens = std::move(special_tokens);
  if (normalization == Normalization::NFC) spec.normalizers.push_back({});  // NormalizerStep's default: NFC
  PreTokenizerStep split;
  split.regex = std::make_shared<RegexSplitter>(pattern);
  spec.pre_tokenizers.push_back(std::move(split));
  spec.decoders.push_back({});
  BpeOptions options;
  options.alphabet = BpeOptions::Alphabet::Bytes;
  try {
    return std::make_unique<BpePipeline>(std::move(spec),
                                         std::make_unique<BpeModel>(std::move(vocab), merges, options));
  } catch (const ft::Error& e) {
    throw ft::Error(merges_path + ": " + e.what());
  }
}

}  // namespace ft_tok
