// The published tokenizer files and expected ids that scripts/tokenizer_fixtures.py writes (to
// build/tokenizer_fixtures, or $FT_TOKENIZER_FIXTURES), and the tokenizer components built on them.
// A missing file fails the test that needs it, saying how to make it.
#pragma once

#include "text_data_support.h"

#include <cstdlib>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fttest::published {

inline std::string fixtures_dir() {
  if (const char* env = std::getenv("FT_TOKENIZER_FIXTURES"); env && *env) return env;
  return FT_TOKENIZER_FIXTURES_DIR;
}

// DIR/<family>/<name>; throws (failing the test) when it is missing.
inline std::string file(const std::string& family, const std::string& name) {
  const auto path = fixtures_dir() + "/" + family + "/" + name;
  if (!std::ifstream(path))
    throw std::runtime_error("tokenizer fixture " + path +
                             " is missing: run `.venv/bin/python scripts/tokenizer_fixtures.py --out " +
                             fixtures_dir() + "` (scripts/test.sh runs it; it needs PyPI)");
  return path;
}

inline std::vector<nlohmann::json> read_jsonl(const std::string& family, const std::string& name) {
  std::ifstream in(file(family, name));
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

inline nlohmann::json meta(const std::string& family) { return read_json_file(file(family, "meta.json")); }

struct Family {
  std::string name;      // the test's name
  std::string expected;  // the fixtures' family directory holding its expected ids
  // The tokenizer component on the published files; `keys`: more TOML lines for its table.
  std::function<std::shared_ptr<ft::Tokenizer>(const std::string& keys)> make;
};

inline void PrintTo(const Family& f, std::ostream* os) { *os << f.name; }

inline std::shared_ptr<ft::Tokenizer> gemma(const std::string& keys = "") {
  return make_tokenizer("torchtune.models.gemma.gemma_tokenizer",
                        "path = " + quoted(file("gemma", "tokenizer.model")) + "\n" + keys);
}
inline std::shared_ptr<ft::Tokenizer> mistral(const std::string& keys = "") {
  return make_tokenizer("torchtune.models.mistral.mistral_tokenizer",
                        "path = " + quoted(file("mistral", "tokenizer.model")) + "\n" + keys);
}
inline std::shared_ptr<ft::Tokenizer> phi3_mini(const std::string& keys = "") {
  return make_tokenizer("torchtune.models.phi3.phi3_mini_tokenizer",
                        "path = " + quoted(file("phi3_mini", "tokenizer.model")) + "\n" + keys);
}
inline std::shared_ptr<ft::Tokenizer> phi4(const std::string& keys = "") {
  return make_tokenizer("torchtune.models.phi4.phi4_tokenizer",
                        "vocab_path = " + quoted(file("phi4", "vocab.json")) +
                            "\nmerges_path = " + quoted(file("phi4", "merges.txt")) + "\n" + keys);
}
inline std::shared_ptr<ft::Tokenizer> qwen3(const std::string& keys = "") {
  return make_tokenizer("torchtune.models.qwen3.qwen3_tokenizer",
                        "path = " + quoted(file("qwen3", "vocab.json")) +
                            "\nmerges_file = " + quoted(file("qwen3", "merges.txt")) + "\n" + keys);
}
inline std::shared_ptr<ft::Tokenizer> qwen3_tokenizer_json(const std::string& keys = "") {
  return make_tokenizer("torchtune.models.qwen3.qwen3_tokenizer",
                        "path = " + quoted(tokenizers_dir() + "/qwen3/tokenizer.json") + "\n" + keys);
}

inline std::vector<Family> families() {
  return {{"gemma", "gemma", [](const std::string& k) { return gemma(k); }},
          {"mistral", "mistral", [](const std::string& k) { return mistral(k); }},
          {"phi3_mini", "phi3_mini", [](const std::string& k) { return phi3_mini(k); }},
          {"phi4", "phi4", [](const std::string& k) { return phi4(k); }},
          {"qwen3", "qwen3", [](const std::string& k) { return qwen3(k); }},
          {"qwen3_tokenizer_json", "qwen3", [](const std::string& k) { return qwen3_tokenizer_json(k); }}};
}

}  // namespace fttest::published
