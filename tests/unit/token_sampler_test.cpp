// The next-token sampler: greedy is the argmax, top-k 1 and a tiny top-p are greedy too, draws
// follow the softmax at the temperature, top-k / top-p never leave their candidates, and a seed
// repeats its draws while another seed does not.
#include "generate/token_sampler.h"
#include "test_helpers.h"

#include <ft/errors.h>

#include <cmath>
#include <map>
#include <set>

namespace {

using fthost::SamplingSettings;
using fthost::TokenSampler;

const std::vector<float> kLogits = {0.5f, 2.0f, -1.0f, 1.0f, 2.0f, 0.0f};

std::vector<std::int64_t> draws(SamplingSettings settings, std::uint64_t seed, int n,
                                const std::vector<float>& logits = kLogits) {
  TokenSampler sampler(settings, seed);
  std::vector<std::int64_t> out;
  for (int i = 0; i < n; ++i) out.push_back(sampler.next(logits));
  return out;
}

TEST(TokenSampler, GreedyIsTheFirstLargestLogit) {
  EXPECT_EQ(fthost::argmax(kLogits), 1);  // ids 1 and 4 tie: the lower id, as torch.argmax
  EXPECT_EQ(draws({}, 3, 5), std::vector<std::int64_t>(5, 1));
  EXPECT_EQ(draws({1.0, 1, 1.0}, 3, 20), std::vector<std::int64_t>(20, 1));   // top-k 1
  EXPECT_EQ(draws({1.0, 0, 1e-6}, 3, 20), std::vector<std::int64_t>(20, 1));  // the smallest nucleus
}

TEST(TokenSampler, ASeedRepeatsItsDrawsAndAnotherSeedDoesNot) {
  const SamplingSettings s{1.0, 0, 1.0};
  EXPECT_EQ(draws(s, 42, 200), draws(s, 42, 200));
  EXPECT_NE(draws(s, 42, 200), draws(s, 43, 200));
}

TEST(TokenSampler, DrawsFollowTheSoftmaxAtTheTemperature) {
  for (double temperature : {1.0, 0.5}) {
    const int n = 40000;
    std::map<std::int64_t, int> counts;
    for (std::int64_t id : draws({temperature, 0, 1.0}, 1, n)) ++counts[id];
    double total = 0;
    for (float l : kLogits) total += std::exp(l / temperature);
    for (std::size_t id = 0; id < kLogits.size(); ++id) {
      const double p = std::exp(kLogits[id] / temperature) / total;
      // 5 standard deviations of a binomial frequency.
      EXPECT_NEAR(counts[static_cast<std::int64_t>(id)] / double(n), p, 5 * std::sqrt(p * (1 - p) / n) + 1e-9)
          << "id " << id << " at temperature " << temperature;
    }
  }
}

TEST(TokenSampler, TopKAndTopPDrawOnlyTheirCandidates) {
  std::set<std::int64_t> seen;
  for (std::int64_t id : draws({1.0, 3, 1.0}, 5, 2000)) seen.insert(id);
  EXPECT_EQ(seen, (std::set<std::int64_t>{1, 3, 4}));  // the three largest logits
  // Probabilities 0.080, 0.360, 0.018, 0.132, 0.360, 0.049: the nucleus of 0.3 is id 1 alone,
  // of 0.5 ids 1 and 4 (0.72), of 0.8 those and id 3 (0.85).
  const std::map<double, std::set<std::int64_t>> nuclei = {{0.3, {1}}, {0.5, {1, 4}}, {0.8, {1, 3, 4}}};
  for (const auto& [top_p, expected] : nuclei) {
    seen.clear();
    for (std::int64_t id : draws({1.0, 0, top_p}, 5, 2000)) seen.insert(id);
    EXPECT_EQ(seen, expected) << "top_p " << top_p;
  }
}

TEST(TokenSampler, RefusesSettingsOutsideTheirRange) {
  EXPECT_NE(fttest::error_of<ft::Error>([] {
              TokenSampler({-0.1, 0, 1.0}, 0);
            }).find("--temperature"),
            std::string::npos);
  EXPECT_NE(fttest::error_of<ft::Error>([] { TokenSampler({1.0, -2, 1.0}, 0); }).find("--top-k"), std::string::npos);
  EXPECT_NE(fttest::error_of<ft::Error>([] { TokenSampler({1.0, 0, 0.0}, 0); }).find("--top-p"), std::string::npos);
  EXPECT_NE(fttest::error_of<ft::Error>([] { TokenSampler({1.0, 0, 1.5}, 0); }).find("--top-p"), std::string::npos);
}

}  // namespace
