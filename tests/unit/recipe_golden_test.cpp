// The recipe end to end against torchtune's own trajectories ($FT_FIXTURES/golden): the real
// fthost binary trains each golden case from its Hugging Face fixture and must reproduce every
// step's loss, lr, grad_norm and token count, and the final weights, within the tolerances the
// fixtures' README gives for a correct fp32 implementation.
#include "golden_cases.h"
#include "test_helpers.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace {

using namespace fttest::golden;

class GoldenTrajectory : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenTrajectory, MatchesTorchtune) {
  const GoldenCase& gc = GetParam();
  const std::string out = fttest::temp_dir();
  const std::string config = fttest::write_temp("run.toml", config_for(gc.name, gc.loss, out));
  const auto result = fttest::run_fthost("--config " + config);
  ASSERT_EQ(result.exit_code, 0) << result.output;

  expect_matches_golden(gc.name, out, result.output);
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenTrajectory, ::testing::ValuesIn(cases_with_every_loss()),
                         [](const auto& param_info) { return case_test_name(param_info.param); });

}  // namespace

namespace {

using namespace fttest::golden;

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// `[[dataset]]` concatenates (torchtune's ConcatDataset) and `[[metric_logger]]` fans out: the
// case's data listed twice reads the first copy first, so the first 40 samples — all the case
// consumes — and the trajectory are unchanged, and both loggers record it.
TEST(RecipeLists, ConcatenatedDatasetsAndSeveralLoggers) {
  const std::string out = fttest::temp_dir();
  std::string toml = config_for("llama3_untied_ga2", "torchtune.modules.loss.CEWithChunkedOutputLoss", out);
  const std::string source = golden_dir() + "/fixtures/llama3_untied/data.jsonl";
  toml = replace_once(toml, "[dataset]\n", "[[dataset]]\n");
  toml = replace_once(toml, "[metric_logger]\n",
                      "[[dataset]]\n_component_ = \"fthost.datasets.tokenized_jsonl\"\nsource = \"" + source +
                          "\"\n\n[[metric_logger]]\n_component_ = \"torchtune.training.metric_logging.DiskLogger\"\n"
                          "log_dir = \"" +
                          out +
                          "/logs2\"\nfilename = \"metrics.jsonl\"\noutput_fmt = \"jsonl\"\n\n"
                          "[[metric_logger]]\n");
  const auto r = fttest::run_fthost("--config " + fttest::write_temp("run.toml", toml));
  ASSERT_EQ(r.exit_code, 0) << r.output << "\n" << toml;
  std::ifstream data(source);
  const auto lines = std::count(std::istreambuf_iterator<char>(data), {}, '\n');
  EXPECT_NE(r.output.find(std::to_string(2 * lines) + " samples"), std::string::npos) << r.output;
  expect_matches_golden("llama3_untied_ga2", out, r.output);
  EXPECT_EQ(fttest::read_file(out + "/logs/metrics.jsonl"), fttest::read_file(out + "/logs2/metrics.jsonl"));
}

}  // namespace
