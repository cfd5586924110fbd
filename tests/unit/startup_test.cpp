// Start-up without LibTorch: the fthost executable links no LibTorch, and --version, ls and
// validate load neither LibTorch nor any plugin library (the dynamic loader's own log says
// what was loaded); training still loads both, with OMP_WAIT_POLICY set before LibTorch.
#include "test_helpers.h"

#include <gtest/gtest.h>

#include <array>
#include <sstream>
#include <string>
#include <vector>

namespace {

const std::string kDemo = std::string(FT_SOURCE_DIR) + "/configs/tiny_demo.toml";

// The libraries of LibTorch (libtorch.so, libtorch_cpu.so, libc10.so) and its OpenMP runtime.
bool names_libtorch(const std::string& text) {
  return text.find("libtorch") != std::string::npos || text.find("libc10") != std::string::npos ||
         text.find("libgomp") != std::string::npos;
}

TEST(Startup, ExecutableLinksNoLibTorch) {
  const auto r = fttest::run_shell("readelf -d " + std::string(FTHOST_BINARY));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> needed;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    if (line.find("(NEEDED)") != std::string::npos) needed.push_back(line);
  ASSERT_FALSE(needed.empty()) << r.output;
  bool sdk = false;
  for (const auto& line : needed) {
    EXPECT_FALSE(names_libtorch(line)) << line;
    EXPECT_EQ(line.find("libftsdk_torch"), std::string::npos) << line;
    sdk = sdk || line.find("[libftsdk.so") != std::string::npos;
  }
  EXPECT_TRUE(sdk) << "the LibTorch-free SDK should be linked:\n" << r.output;
}

// The dynamic loader's log (LD_DEBUG=libs: every library it opens) of `<env> fthost <args>`, and the
// command's result.
struct LoaderLog {
  fttest::CommandResult result;
  std::string log;
};

LoaderLog loaded_libraries(const std::string& args, const std::string& env = "") {
  fttest::TempDir dir;
  LoaderLog out;
  out.result = fttest::run_shell("env " + env + " LD_DEBUG=libs LD_DEBUG_OUTPUT=" + dir.file("ld") + " " +
                                 std::string(FTHOST_BINARY) + " " + args);
  for (const auto& entry : boost::filesystem::directory_iterator(dir.str()))
    out.log += fttest::read_file(entry.path().string());
  return out;
}

TEST(Startup, DescribingCommandsLoadNoLibTorchAndNoPlugin) {
  for (const std::string& args :
       std::vector<std::string>{"--version", "--help", "ls", "ls -v", "plugins", "validate --config " + kDemo}) {
    const auto r = loaded_libraries(args);
    ASSERT_EQ(r.result.exit_code, 0) << args << "\n" << r.result.output;
    // The log is there at all: the host's own SDK appears in it.
    ASSERT_NE(r.log.find("libftsdk.so"), std::string::npos) << args << "\n" << r.log;
    EXPECT_FALSE(names_libtorch(r.log)) << args << "\n" << r.log;
    EXPECT_EQ(r.log.find("/fthost/plugins/"), std::string::npos) << args << ": a plugin library was loaded";
    EXPECT_EQ(r.log.find("libfthost_training"), std::string::npos) << args;
  }
}

TEST(Startup, ValidateStillChecksComponentsAndSettingsWithoutLoadingPlugins) {
  // An unknown optimizer key and a refused setting combination: both come from the plugins'
  // schemas and the recipe's rules, read from the manifests.
  const auto r = fttest::run_fthost("validate --config " + kDemo + " optimizer.not_a_key=1 optimizer_in_bwd=true");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("not_a_key"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Gradient clipping is not supported with optimizer in bwd"), std::string::npos) << r.output;
}

const std::string kShortRun = "--config " + kDemo + " dataset.source=" + FT_SOURCE_DIR +
                              "/configs/demo/sort_tokens.jsonl epochs=1 max_steps_per_epoch=2 log_every_n_steps=1";

TEST(Startup, TrainingSetsThePassiveOpenMPWaitPolicyWhenUnset) {
  const std::string dir = fttest::temp_dir();
  const auto r = loaded_libraries(kShortRun + " output_dir=" + dir + "/out", "-u OMP_WAIT_POLICY");
  ASSERT_EQ(r.result.exit_code, 0) << r.result.output;
  EXPECT_NE(r.result.output.find("(OMP_WAIT_POLICY=PASSIVE)"), std::string::npos) << r.result.output;
  // Training does load LibTorch and the plugins, through the training library.
  EXPECT_NE(r.log.find("libfthost_training.so"), std::string::npos);
  EXPECT_NE(r.log.find("libtorch"), std::string::npos);
  EXPECT_NE(r.log.find("/fthost/plugins/libft_model_llama3.so"), std::string::npos);
}

TEST(Startup, TrainingKeepsAnOpenMPWaitPolicyTheUserSet) {
  const std::string dir = fttest::temp_dir();
  const auto r = fttest::run_shell("env OMP_WAIT_POLICY=ACTIVE " + std::string(FTHOST_BINARY) + " " + kShortRun +
                                   " output_dir=" + dir + "/out");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(OMP_WAIT_POLICY=ACTIVE)"), std::string::npos) << r.output;
}

}  // namespace
