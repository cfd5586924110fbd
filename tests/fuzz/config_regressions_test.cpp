// Config inputs the config fuzzer crashed on, with the behaviour they must have instead.
#include <ft/errors.h>
#include <gtest/gtest.h>
#include "config/config_loader.h"

#include <string>
#include <vector>

namespace {

std::shared_ptr<ft::detail::ConfigDocument> resolved(const std::string& toml,
                                                     const std::vector<std::string>& overrides = {}) {
  auto doc = fthost::load_config_text(toml, "test.toml");
  fthost::apply_overrides(*doc, overrides);
  fthost::interpolate(*doc);
  return doc;
}

std::string string_at(const ft::detail::ConfigDocument& doc, const std::string& path) {
  const toml::node* node = doc.find(path);
  if (!node || !node->is_string()) return "<not a string>";
  return *node->value<std::string>();
}

// `n` keys, each a reference to the next and the last "x": resolving the first (zero-padded names
// sort it first) follows the whole chain.
std::string reference_chain(int n) {
  auto name = [](int i) {
    std::string digits = std::to_string(i);
    return "k" + std::string(4 - digits.size(), '0') + digits;
  };
  std::string toml;
  for (int i = 0; i + 1 < n; ++i) toml += name(i) + " = \"${" + name(i + 1) + "}\"\n";
  return toml + name(n - 1) + " = \"x\"\n";
}

}  // namespace

// `c` names an array item that holds a reference itself; it used to be resolved as if the array
// were a table (a null dereference). Array items splice as text, so both become "x".
TEST(ConfigFuzzRegressions, ReferenceToArrayItemThatHoldsAReference) {
  const auto doc = resolved("b = \"x\"\nc = \"${z.0}\"\nz = [\"${b}\", \"pre-${b}\"]\n");
  EXPECT_EQ(string_at(*doc, "c"), "x");
  EXPECT_EQ(string_at(*doc, "z.0"), "x");
  EXPECT_EQ(string_at(*doc, "z.1"), "pre-x");
}

// Each level of an override key became a level of recursion; 50,000 overflowed the stack.
TEST(ConfigFuzzRegressions, OverrideKeyNestingIsBounded) {
  std::string deep = "k";
  for (int i = 0; i < 300; ++i) deep += ".k";
  try {
    resolved("a = 1\n", {deep + "=1"});
    FAIL() << "a 301-level override key was accepted";
  } catch (const ft::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("nests deeper than 256 levels"), std::string::npos) << e.what();
  }
  const auto doc = resolved("a = 1\n", {"k.k.k.k=\"ok\""});
  EXPECT_EQ(string_at(*doc, "k.k.k.k"), "ok");
}

// Each reference in a chain was a level of recursion; 20,000 overflowed the stack.
TEST(ConfigFuzzRegressions, ReferenceChainLengthIsBounded) {
  EXPECT_EQ(string_at(*resolved(reference_chain(200)), "k0000"), "x");
  try {
    resolved(reference_chain(400));
    FAIL() << "a chain of 400 references was accepted";
  } catch (const ft::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("interpolation chain longer than 256 references"), std::string::npos)
        << e.what();
  }
}

// A quoted key holding '.' cannot be addressed by a dotted path; interpolating the table it sits
// in looked its string up by path, found nothing and dereferenced null. It is refused at load.
TEST(ConfigFuzzRegressions, QuotedKeyWithADotIsRefusedAtLoad) {
  try {
    resolved("[a.\"b. c\"]\nx = \"${y}\"\ny = \"1\"\n");
    FAIL() << "a key with '.' was accepted";
  } catch (const ft::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("test.toml:1: key \"b. c\" in a contains '.'"), std::string::npos) << e.what();
  }
  try {
    resolved("\"\" = 1\n");
    FAIL() << "an empty key was accepted";
  } catch (const ft::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("key \"\" is empty"), std::string::npos) << e.what();
  }
}
