// YAML config inputs the yaml_config fuzzer stopped on, with the behaviour they must have instead.
#include <ft/errors.h>
#include <gtest/gtest.h>
#include "config/omegaconf_scalars.h"
#include "config/yaml_config.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <vector>

namespace {

// The error loading `text` gives, or "<loaded>". A load still running after 10 s is the hang
// itself: the process ends there, as the stuck thread cannot be stopped.
std::string load_error(const std::string& text) {
  auto result = std::async(std::launch::async, [text] {
    try {
      fthost::load_yaml_config_text(text, "fuzz.yaml");
      return std::string("<loaded>");
    } catch (const ft::ConfigError& e) {
      return std::string(e.what());
    }
  });
  if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    std::fprintf(stderr, "loading %s did not return within 10 s\n", ::testing::PrintToString(text).c_str());
    std::_Exit(1);
  }
  return result.get();
}

}  // namespace

// yaml-cpp 0.7 reads a ',' outside any [...] or {...}, where a value or a document should start,
// as an empty document without consuming it: YAML::LoadAll never returned (libFuzzer's first timed
// run found the first input below in 13 s). Each is now an error naming the line of the ','.
TEST(YamlConfigFuzzRegressions, CommaOutsideAFlowCollectionIsAnErrorNotAHang) {
  struct Case {
    std::string text, where;
  };
  const std::vector<Case> cases = {
      {", [0, 1\272a:2\nb:, [0, 1\n", "fuzz.yaml:1:1: "},  // the fuzzer's input (\272 is the byte 0xBA)
      {",", "fuzz.yaml:1:1: "},
      {", [0]\n", "fuzz.yaml:1:1: "},
      {"- 1\n,\n", "fuzz.yaml:2:1: "},
      {"\"a\" ,\n", "fuzz.yaml:1:5: "},
      {"{a: 1},\n", "fuzz.yaml:1:7: "},
      {"--- ,\n", "fuzz.yaml:1:5: "},
  };
  const auto started = std::chrono::steady_clock::now();
  for (const auto& c : cases) {
    const std::string error = load_error(c.text);
    EXPECT_EQ(error.rfind(c.where + "invalid YAML: ',' outside a flow collection", 0), 0u)
        << ::testing::PrintToString(c.text) << ": " << error;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
}

// The stuck-token check leaves what yaml-cpp reads to yaml-cpp: a ',' inside a plain scalar or a
// flow collection, and a real second document, read as before.
TEST(YamlConfigFuzzRegressions, CommasYamlAllowsStillLoad) {
  EXPECT_EQ(load_error("a: x, y\nb: [1, 2]\nc: {d: 1, e: 2}\ng: h\n  , i\n"), "<loaded>");
  EXPECT_EQ(load_error("a: 1\n---\nb: 2\n"),
            "fuzz.yaml:3: a second YAML document (after ---): a config file holds one");
  EXPECT_EQ(load_error(""), "<loaded>");
}

// A YAML 1.1 base-60 float whose first part is too large for a double (the fuzzer grew one from
// "1:30.") threw std::out_of_range out of std::stod, which no caller expects from a config load.
// PyYAML reads it as infinity; so does the loader now.
TEST(YamlConfigFuzzRegressions, HugeBase60FloatIsInfinityNotACrash) {
  const std::string huge(400, '9');
  const auto positive = fthost::resolve_plain_scalar(huge + ":30.");
  EXPECT_EQ(positive.type, fthost::PlainScalar::Type::Float);
  EXPECT_TRUE(std::isinf(positive.number) && positive.number > 0);
  const auto negative = fthost::resolve_plain_scalar("-" + huge + ":30.5");
  EXPECT_TRUE(std::isinf(negative.number) && negative.number < 0);
  EXPECT_EQ(load_error("a: " + huge + ":30.\n"), "<loaded>");
}
