// bfloat16 across ranks: every torchtune YAML sets `dtype: bf16`, so every strategy's collectives
// (DDP's gradient all-reduce, FSDP / HSDP's all-gather and reduce-scatter, tensor parallelism's
// all-reduces, the loss and token-count reductions) must carry bfloat16 tensors over Gloo. Each
// strategy's run is compared with the same samples trained by one rank in bfloat16: the same
// losses up to bfloat16's rounding of the differently ordered sums.
#include "golden_cases.h"
#include "test_helpers.h"

#include <cmath>
#include <vector>

namespace {

using namespace fttest::golden;

const char* kLoss = "torchtune.modules.loss.CEWithChunkedOutputLoss";
const char* kCase = "llama3_untied_ga2";  // 2 micro-batches of 2 samples per optimizer step

std::vector<double> losses(const std::string& out) {
  std::vector<double> values;
  for (const json& row : read_jsonl(out + "/logs/metrics.jsonl"))
    if (row.contains("loss")) values.push_back(row.at("loss").get<double>());
  return values;
}

struct Bf16Case {
  std::string name;
  int ranks;
  int batch_size;  // per data-parallel rank; 0: the case's own
  int grad_accum;
  std::string overrides;
};

class Bf16AcrossRanks : public ::testing::TestWithParam<Bf16Case> {};

TEST_P(Bf16AcrossRanks, TrainsAsOneRankDoes) {
  const Bf16Case& c = GetParam();
  const std::string single_out = fttest::temp_dir();
  const auto single = fttest::run_fthost(
      "--config " + fttest::write_temp("run.toml", config_for(kCase, kLoss, single_out)) + " dtype=bf16");
  ASSERT_EQ(single.exit_code, 0) << single.output;

  const std::string out = fttest::temp_dir();
  const std::string config = fttest::write_temp("run.toml", config_for(kCase, kLoss, out, c.batch_size, c.grad_accum));
  const auto r = fttest::run_fthost("--nproc-per-node " + std::to_string(c.ranks) + " --config " + config +
                                    " dtype=bf16 " + c.overrides);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(cpu:gloo; this rank on "), std::string::npos) << r.output;

  const std::vector<double> expected = losses(single_out), got = losses(out);
  ASSERT_EQ(got.size(), expected.size()) << r.output;
  ASSERT_GE(got.size(), 2u);
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << "step " << i + 1;
    EXPECT_LT(rel_diff(got[i], expected[i]), 2e-2) << "step " << i + 1 << ": " << got[i] << " vs " << expected[i];
  }
  EXPECT_LT(got.back(), got.front()) << "the loss does not fall";
}

INSTANTIATE_TEST_SUITE_P(
    Strategies, Bf16AcrossRanks,
    ::testing::Values(
        Bf16Case{"ddp", 2, 2, 1, "parallelism._component_=fthost.parallelism.ddp"},
        Bf16Case{"fsdp", 2, 2, 1, "parallelism._component_=fthost.parallelism.fsdp"},
        Bf16Case{"hsdp_2x2", 4, 1, 1,
                 "parallelism._component_=fthost.parallelism.hsdp parallelism.data_parallel_replicate_dim=2"},
        Bf16Case{"tensor_parallel", 2, 0, 0,
                 "tensor_parallel_dim=2 tensor_parallel_plan._component_=torchtune.models.llama3.base_llama_tp_plan"}),
    [](const auto& param_info) { return param_info.param.name; });

}  // namespace
