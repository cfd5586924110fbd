// Whole runs on a CUDA device (tests/gpu: built in every CUDA build, run by scripts/gpu_check.sh
// on a machine with a GPU, left out of the CPU suite by their `gpu` label):
//   - every golden case on CUDA in float32 reproduces torchtune's trajectory within the fixtures'
//     tolerances (fused attention, LibTorch's fused AdamW, the composite RMSNorm / SwiGLU / loss);
//   - bfloat16 runs stay finite and their loss falls, alone and with activation checkpointing,
//     activation offloading, the optimizer in backward and FSDP's CPU offload.
#include "golden_cases.h"
#include "test_helpers.h"

#include <cmath>
#include <vector>

namespace {

using namespace fttest::golden;

class CudaGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(CudaGolden, MatchesTorchtuneInFloat32) {
  const GoldenCase& c = GetParam();
  const std::string out = fttest::temp_dir();
  const auto r = fttest::run_fthost("--config " + fttest::write_temp("run.toml", config_for(c.name, c.loss, out)) +
                                    " device=cuda");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_matches_golden(c.name, out, r.output);
}

INSTANTIATE_TEST_SUITE_P(Golden, CudaGolden, ::testing::ValuesIn(cases_with_every_loss()),
                         [](const auto& param_info) { return case_test_name(param_info.param); });

struct Bf16Run {
  std::string name;
  std::string launcher;
  std::string overrides;
};

class CudaBf16 : public ::testing::TestWithParam<Bf16Run> {};

// The demo model, bfloat16 on the GPU, 64 steps: every loss finite, and the last 8 steps' mean
// below the first 8's.
TEST_P(CudaBf16, LossIsFiniteAndFalls) {
  const Bf16Run& c = GetParam();
  const std::string out = fttest::temp_dir();
  // The demo's dataset path is relative to the source tree; ctest runs in the build tree.
  const std::string source(FT_SOURCE_DIR);
  const auto r =
      fttest::run_fthost(c.launcher + " --config " + source + "/configs/tiny_demo.toml dataset.source=" + source +
                         "/configs/demo/sort_tokens.jsonl device=cuda dtype=bf16 epochs=1 "
                         "max_steps_per_epoch=64 output_dir=" +
                         out +
                         " metric_logger._component_=torchtune.training.metric_logging.DiskLogger"
                         " metric_logger.log_dir=" +
                         out +
                         "/logs metric_logger.filename=metrics.jsonl"
                         " metric_logger.output_fmt=jsonl log_every_n_steps=1 " +
                         c.overrides);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<double> losses;
  for (const json& row : read_jsonl(out + "/logs/metrics.jsonl"))
    if (row.contains("loss")) losses.push_back(row.at("loss").get<double>());
  ASSERT_GE(losses.size(), 16u) << r.output;
  double first = 0, last = 0;
  for (std::size_t i = 0; i < losses.size(); ++i) ASSERT_TRUE(std::isfinite(losses[i])) << "step " << i + 1;
  for (std::size_t i = 0; i < 8; ++i) {
    first += losses[i];
    last += losses[losses.size() - 1 - i];
  }
  EXPECT_LT(last, first * 0.9) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    Features, CudaBf16,
    ::testing::Values(Bf16Run{"plain", "", ""}, Bf16Run{"fused_adamw", "", "optimizer.fused=true"},
                      Bf16Run{"activation_checkpointing", "", "enable_activation_checkpointing=true"},
                      Bf16Run{"activation_offloading", "",
                              "enable_activation_checkpointing=true enable_activation_offloading=true"},
                      Bf16Run{"optimizer_in_backward", "", "optimizer_in_bwd=true clip_grad_norm=null"},
                      Bf16Run{"fsdp_cpu_offload_one_rank", "--nproc-per-node 1",
                              "parallelism._component_=fthost.parallelism.fsdp parallelism.cpu_offload=true"}),
    [](const auto& param_info) { return param_info.param.name; });

}  // namespace
