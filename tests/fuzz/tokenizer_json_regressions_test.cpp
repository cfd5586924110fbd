// tokenizer.json inputs the tokenizer_json fuzz target found problems with, and the behaviour they
// must have instead.
#include <ft/errors.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "bpe_loaders.h"

namespace {

// A tiny BPE tokenizer.json ("a", "b", "ab") with `pre_tokenizer` as given.
std::string write_tokenizer_json(const std::string& pre_tokenizer) {
  const std::string path = ::testing::TempDir() + "/regression-tokenizer.json";
  std::ofstream(path) << R"({"pre_tokenizer": )" << pre_tokenizer
                      << R"(, "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}})";
  return path;
}

}  // namespace

// An empty Metaspace replacement made pre-tokenization loop forever on the first input.
TEST(TokenizerJsonFuzzRegressions, EmptyMetaspaceReplacementIsRefused) {
  const std::string path = write_tokenizer_json(R"({"type": "Metaspace", "replacement": ""})");
  try {
    ft_tok::load_hf_tokenizer_json(path);
    FAIL() << "an empty Metaspace replacement was accepted";
  } catch (const ft::Error& e) {
    EXPECT_NE(std::string(e.what()).find("pre_tokenizer.replacement: must not be empty"), std::string::npos)
        << e.what();
  }
  std::remove(path.c_str());
}

// The same step with a one-character replacement splits before each replaced space.
TEST(TokenizerJsonFuzzRegressions, MetaspaceWithOneCharacterReplacementEncodes) {
  const std::string path =
      write_tokenizer_json(R"({"type": "Metaspace", "replacement": "b", "prepend_scheme": "never"})");
  const auto tokenizer = ft_tok::load_hf_tokenizer_json(path);
  // "a a" -> "aba" -> pieces "a", "ba" -> [a], [b, a] (no "ba" merge)
  EXPECT_EQ(tokenizer->encode("a a"), (std::vector<std::int64_t>{0, 1, 0}));
  std::remove(path.c_str());
}

// A token id of 2e75 (a float in JSON) was converted to int: undefined behaviour. Ids must be
// integers in [0, 2^31 - 1); anything else is refused naming the entry.
TEST(TokenizerJsonFuzzRegressions, TokenIdsOutsideTheIntegerRangeAreRefused) {
  const std::string path = ::testing::TempDir() + "/regression-token-ids.json";
  const auto load_with = [&](const std::string& vocab_id, const std::string& added_id) -> std::string {
    std::ofstream(path) << R"({"added_tokens": [{"id": )" << added_id
                        << R"(, "content": "<s>", "special": true}], "model": {"type": "BPE", "vocab": {"a": )"
                        << vocab_id << R"(, "b": 1, "ab": 2}, "merges": ["a b"]}})";
    try {
      ft_tok::load_hf_tokenizer_json(path);
      return "";
    } catch (const ft::Error& e) {
      return e.what();
    }
  };
  EXPECT_EQ(load_with("0", "3"), "");
  EXPECT_EQ(load_with("0", "2147483646"), "");
  for (const std::string bad : {"2.0777e75", "1.5", "-1", "2147483647", "\"3\""}) {
    const std::string vocab_error = load_with(bad, "3");
    EXPECT_NE(vocab_error.find("model.vocab[\"a\"]: expected a token id, an integer from 0 to 2147483646"),
              std::string::npos)
        << bad << ": " << vocab_error;
    const std::string added_error = load_with("0", bad);
    EXPECT_NE(added_error.find("added_tokens: \"<s>\": expected a token id"), std::string::npos)
        << bad << ": " << added_error;
  }
  std::remove(path.c_str());
}
