// The recipe end to end against torchtune's own trajectories ($FT_FIXTURES/golden): the real
// fthost binary trains each golden case from its Hugging Face fixture and must reproduce every
// step's loss, lr, grad_norm and token count, and the final weights, within the tolerances the
// fixtures' README gives for a correct fp32 implementation.
#include "golden_cases.h"
#include "test_helpers.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace {

using namespace fttest::golden;

struct GoldenCase {
  std::string name;
  std::string loss;
};

std::ostream& operator<<(std::ostream& os, const GoldenCase& c) { return os << c.name << " / " << c.loss; }

class GoldenTrajectory : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenTrajectory, MatchesTorchtune) {
  const GoldenCase& gc = GetParam();
  const std::string out = fttest::temp_dir();
  const std::string config = fttest::write_temp("run.toml", config_for(gc.name, gc.loss, out));
  const auto result = fttest::run_fthost("--config " + config);
  ASSERT_EQ(result.exit_code, 0) << result.output;

  expect_matches_golden(gc.name, out, result.output);
}

std::vector<GoldenCase> all_cases() {
  std::vector<GoldenCase> cases;
  for (const char* name : {"llama3_untied_ga2", "llama31_tied_clip", "qwen2_tied_ga2_clip"})
    for (const char* loss : {"torch.nn.CrossEntropyLoss", "torchtune.modules.loss.CEWithChunkedOutputLoss",
                             "torchtune.modules.loss.LinearCrossEntropyLoss"})
      cases.push_back({name, loss});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenTrajectory, ::testing::ValuesIn(all_cases()), [](const auto& info) {
  std::string loss = info.param.loss.substr(info.param.loss.rfind('.') + 1);
  return info.param.name + "_" + loss;
});

}  // namespace
