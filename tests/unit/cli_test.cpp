// The fthost binary end to end: exit codes and the messages a user sees.
#include "test_helpers.h"

#include <array>
#include <cstdio>

namespace {

struct Result {
  int exit_code;
  std::string output;
};

Result run(const std::string& args) {
  const std::string cmd = std::string(FTHOST_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (std::size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

const std::string kDemo = std::string(FT_SOURCE_DIR) + "/configs/tiny_demo.toml";

TEST(Cli, VersionAndHelp) {
  auto v = run("--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.output.find("plugin ABI 1.0"), std::string::npos) << v.output;
  auto h = run("--help");
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.output.find("fthost ls [KIND] [-v]"), std::string::npos);
  EXPECT_EQ(run("--no-such-flag").exit_code, 2);
}

TEST(Cli, LsShowsComponentsAndSchemas) {
  auto r = run("ls optimizer -v");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("torch.optim.AdamW"), std::string::npos);
  EXPECT_NE(r.output.find("weight_decay"), std::string::npos);
  EXPECT_EQ(r.output.find("StdoutLogger"), std::string::npos) << "kind filter must apply";
  auto bad = run("ls optimiser");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("unknown kind 'optimiser'"), std::string::npos);
}

TEST(Cli, PluginsListsLibraries) {
  auto r = run("plugins");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("ft_optim 0.1.0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("libft_logger_disk.so"), std::string::npos);
}

TEST(Cli, ValidateReportsEveryProblem) {
  auto ok = run("validate --config " + kDemo);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  auto bad = run("validate --config " + kDemo + " optimizer.lrr=1 bach_size=2 loss._component_=\\\"torch.optim.SGD\\\"");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("3 problem(s)"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("command line: optimizer.lrr: unknown key; did you mean 'lr'?"), std::string::npos);
  EXPECT_NE(bad.output.find("bach_size: unknown key; did you mean 'batch_size'?"), std::string::npos);
  EXPECT_NE(bad.output.find("'torch.optim.SGD' is an optimizer, not a loss"), std::string::npos);
}

TEST(Cli, BrokenPluginDirFailsWithItsMessage) {
  auto r = run("plugins --plugin-dir " + std::string(FT_TEST_PLUGIN_ROOT) + "/wrong_fingerprint");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("was built for LibTorch 2.5.1"), std::string::npos) << r.output;
}

TEST(Cli, DemoTrainsAndLogsThroughPlugins) {
  auto dir = boost::filesystem::path(fttest::write_temp("x", "")).parent_path().string();
  auto r = run("--config " + kDemo + " output_dir=" + dir + " max_steps_per_epoch=20 log_every_n_steps=10");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string text = fttest::read_file(dir + "/config.effective.toml");
  EXPECT_NE(text.find("max_steps_per_epoch = 20"), std::string::npos) << text;
  EXPECT_NE(text.find("log_dir = '" + dir + "/logs'"), std::string::npos) << text;  // interpolated
  int lines = 0;
  for (auto& e : boost::filesystem::directory_iterator(dir + "/logs")) {
    std::ifstream in(e.path().string());
    for (std::string line; std::getline(in, line);) {
      EXPECT_EQ(line.rfind("{\"step\": ", 0), 0u) << line;
      ++lines;
    }
  }
  EXPECT_EQ(lines, 4);  // 2 epochs x 20 steps, every 10th
}

}  // namespace
