// FT_CPU_KERNELS through real runs of the fthost binary: "aten" takes LibTorch's reference
// operations instead of the fused kernels (the log says which ran) and trains to the same losses,
// since each kernel equals its reference within 1e-6; a value it does not know is refused.
#include "test_helpers.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

namespace {

const std::string kDemo = std::string(FT_SOURCE_DIR) + "/configs/tiny_demo.toml";

fttest::CommandResult run_with_kernels(const std::string& kernels, const std::string& output_dir) {
  const std::string cmd = "env FT_CPU_KERNELS=" + kernels + " " + FTHOST_BINARY + " --config " + kDemo +
                          " max_steps_per_epoch=4 epochs=1 output_dir=" + output_dir +
                          " dataset.source=" + FT_SOURCE_DIR + "/configs/demo/sort_tokens.jsonl";
  return fttest::run_shell(cmd);
}

std::vector<double> logged_losses(const std::string& output) {
  std::vector<double> losses;
  const std::regex loss("Loss: ([0-9.]+)");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), loss); it != std::sregex_iterator(); ++it)
    losses.push_back(std::stod((*it)[1].str()));
  return losses;
}

TEST(CpuKernelSwitch, AtenRunsTheReferenceOperationsToTheSameLosses) {
  const auto fused = run_with_kernels("", fttest::temp_dir() + "/fused");
  ASSERT_EQ(fused.exit_code, 0) << fused.output;
  EXPECT_NE(fused.output.find("cpu kernels: fused"), std::string::npos) << fused.output;

  const auto reference = run_with_kernels("aten", fttest::temp_dir() + "/aten");
  ASSERT_EQ(reference.exit_code, 0) << reference.output;
  EXPECT_NE(reference.output.find("cpu kernels: LibTorch's reference operations"), std::string::npos)
      << reference.output;

  const auto a = logged_losses(fused.output);
  const auto b = logged_losses(reference.output);
  ASSERT_EQ(a.size(), 4u) << fused.output;
  ASSERT_EQ(b.size(), a.size()) << reference.output;
  // The progress line prints four decimals.
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1.5e-4) << "step " << i + 1;
}

TEST(CpuKernelSwitch, AnUnknownValueIsRefusedByName) {
  const auto r = run_with_kernels("sse9", fttest::temp_dir() + "/unknown");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("FT_CPU_KERNELS: expected \"avx2\", \"baseline\" or \"aten\" (or unset), got \"sse9\""),
            std::string::npos)
      << r.output;
}

}  // namespace
