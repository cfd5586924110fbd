// The fthost binary end to end: exit codes and the messages a user sees.
#include "test_helpers.h"
#include "train/training_state.h"

#include <ft/torch_compat.h>
#include <torch/version.h>

#include <regex>

namespace {

using Result = fttest::CommandResult;

Result run(const std::string& args) { return fttest::run_fthost(args); }

const std::string kDemo = std::string(FT_SOURCE_DIR) + "/configs/tiny_demo.toml";

TEST(Cli, VersionAndHelp) {
  auto v = run("--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.output.find("plugin ABI 12.1"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find(std::string("LibTorch ") + TORCH_VERSION), std::string::npos) << v.output;
#if FT_WITH_CUDA
  EXPECT_NE(v.output.find("\nCUDA 13."), std::string::npos) << v.output;
  EXPECT_NE(v.output.find(", NCCL 2."), std::string::npos) << v.output;
#else
  EXPECT_NE(v.output.find("\nno CUDA, no NCCL"), std::string::npos) << v.output;
#endif
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
  auto checkpointers = run("ls checkpointer -v");
  EXPECT_NE(checkpointers.output.find("provides: training_checkpoints"), std::string::npos) << checkpointers.output;
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

// One component table with three bad keys is one error of three lines: the count is of the
// problems printed, not of the errors that carried them.
TEST(Cli, ProblemCountMatchesTheLinesPrinted) {
  auto bad = run("validate --config " + kDemo + " optimizer.lrr=1 optimizer.betaz=1 optimizer.weight_decay=fast");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("3 problem(s) in the configuration:"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("optimizer.lrr: unknown key"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("optimizer.betaz: unknown key"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("optimizer.weight_decay: expected"), std::string::npos) << bad.output;
  const auto head = bad.output.find("problem(s) in the configuration:");
  std::size_t lines = 0;
  for (auto nl = bad.output.find('\n', head); nl != std::string::npos && bad.output.compare(nl + 1, 2, "  ") == 0;
       nl = bad.output.find('\n', nl + 1))
    ++lines;
  EXPECT_EQ(lines, 3u) << bad.output;
}

TEST(Cli, ValidateReportsEveryProblem) {
  auto ok = run("validate --config " + kDemo);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  auto bad =
      run("validate --config " + kDemo + " optimizer.lrr=1 bach_size=2 loss._component_=\\\"torch.optim.SGD\\\"");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("3 problem(s)"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("command line: optimizer.lrr: unknown key; did you mean 'lr'?"), std::string::npos);
  EXPECT_NE(bad.output.find("bach_size: unknown key; did you mean 'batch_size'?"), std::string::npos);
  EXPECT_NE(bad.output.find("'torch.optim.SGD' is an optimizer, not a loss"), std::string::npos);
}

// A top-level key the recipe does not know is accepted when a `${...}` references it (torchtune's
// `name:`), from the file or the command line, and refused, with its suggestion, when nothing does.
TEST(Cli, TopLevelKeyOnlyForInterpolationIsAcceptedWhenReferenced) {
  const std::string dir = fttest::temp_dir();
  std::string demo = fttest::read_file(kDemo);
  const auto output_dir = demo.find("output_dir = ");
  ASSERT_NE(output_dir, std::string::npos);
  demo.erase(output_dir, demo.find('\n', output_dir) - output_dir);

  const std::string referenced =
      fttest::write_temp("referenced.toml", "name = \"tiny\"\noutput_dir = \"" + dir + "/${name}\"\n" + demo);
  auto ok = run("validate --config " + referenced);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  const std::string unreferenced =
      fttest::write_temp("unreferenced.toml", "name = \"tiny\"\nseeds = 1\noutput_dir = \"" + dir + "/out\"\n" + demo);
  auto bad = run("validate --config " + unreferenced);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("2 problem(s)"), std::string::npos) << bad.output;
  EXPECT_NE(
      bad.output.find("unreferenced.toml:1: name: unknown top-level key (docs/config.md lists the recipe's keys)"),
      std::string::npos)
      << bad.output;
  EXPECT_NE(bad.output.find("unreferenced.toml:2: seeds: unknown key; did you mean 'seed'?"), std::string::npos)
      << bad.output;
  // A reference on the command line serves the key as well; one to another unknown key does not
  // make the referring key known.
  auto from_command_line = run("validate --config " + unreferenced + " seeds=null output_dir=" + dir + "/\\${name}");
  EXPECT_EQ(from_command_line.exit_code, 0) << from_command_line.output;
  auto chained = run("validate --config " + unreferenced + " seeds=\\${name}");
  EXPECT_EQ(chained.exit_code, 2) << chained.output;
  EXPECT_NE(chained.output.find("command line: seeds: unknown key; did you mean 'seed'?"), std::string::npos)
      << chained.output;
  EXPECT_EQ(chained.output.find("name: unknown"), std::string::npos) << chained.output;
}

// Every shipped configuration names only components that exist, with valid keys.
TEST(Cli, EveryShippedConfigValidates) {
  int checked = 0;
  for (auto& e : boost::filesystem::recursive_directory_iterator(std::string(FT_SOURCE_DIR) + "/configs")) {
    if (e.path().extension() != ".toml") continue;
    auto r = run("validate --config " + e.path().string());
    EXPECT_EQ(r.exit_code, 0) << e.path() << "\n" << r.output;
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

// The ported torchtune config also validates with the sharded strategies chosen explicitly.
TEST(Cli, PortedConfigValidatesWithFsdpAndHsdp) {
  const std::string config = std::string(FT_SOURCE_DIR) + "/configs/llama3_2/1B_full.yaml";
  for (const char* strategy : {"fthost.parallelism.fsdp", "fthost.parallelism.hsdp", "fthost.parallelism.ddp"}) {
    auto r = run("validate --config " + config + " parallelism._component_=" + strategy);
    EXPECT_EQ(r.exit_code, 0) << strategy << "\n" << r.output;
  }
  auto bad =
      run("validate --config " + config + " parallelism._component_=fthost.parallelism.hsdp parallelism.reshard=1");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("parallelism.reshard: unknown key for fthost.parallelism.hsdp"), std::string::npos)
      << bad.output;
}

// The seed recipe's own configuration rules, with its wording.
TEST(Cli, ValidateAppliesTheSeedsRules) {
  struct Case {
    std::string overrides, message;
  };
  const std::vector<Case> cases = {
      {"dtype=fp16", "full fp16 training is not supported with this recipe. Please use bf16 or fp32 instead."},
      {"dtype=fp64", "dtype: expected \"fp32\" or \"bf16\", got \"fp64\""},
      {"optimizer_in_bwd=true clip_grad_norm=1.0", "Gradient clipping is not supported with optimizer in bwd."},
      {"optimizer_in_bwd=true ~clip_grad_norm gradient_accumulation_steps=2",
       "Gradient accumulation is not supported with optimizer in bwd."},
      {"enable_activation_offloading=true", "enable_activation_offloading should only be True when training on CUDA"},
      {"clip_grad_norm=huge", "clip_grad_norm: expected a positive number or \"inf\", got \"huge\""},
      {"clip_grad_norm=-1", "clip_grad_norm: expected a positive number or \"inf\""},
      {"device=tpu", "device: expected \"cpu\", \"cuda\" or \"cuda:N\", got \"tpu\""},
      {"batch_size=0", "batch_size: expected an integer >= 1, got 0"},
      {"collate_fn=torchtune.data.left_pad_sequence", "left_pad_sequence collator is only for inference."},
  };
  for (const auto& c : cases) {
    auto r = run("validate --config " + kDemo + " " + c.overrides);
    EXPECT_EQ(r.exit_code, 2) << c.overrides << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.overrides << "\n" << r.output;
  }
  EXPECT_EQ(run("validate --config " + kDemo + " clip_grad_norm=inf").exit_code, 0);
  EXPECT_EQ(run("validate --config " + kDemo + " 'clip_grad_norm=\"inf\"'").exit_code, 0);
  EXPECT_EQ(run("validate --config " + kDemo + " collate_fn=torchtune.data.padded_collate_sft").exit_code, 0);
}

// `validate` checks what the build supports; which GPUs a machine has only a run can see.
TEST(Cli, CudaDeviceNeedsACudaBuildAndAVisibleGpu) {
#if FT_WITH_CUDA
  EXPECT_EQ(run("validate --config " + kDemo + " device=cuda").exit_code, 0);
  if (ft::compat::cuda_device_count() == 0) {
    auto r = run("--config " + kDemo + " device=cuda max_steps_per_epoch=1 output_dir=" + fttest::temp_dir() +
                 " dataset.source=" + std::string(FT_SOURCE_DIR) + "/configs/demo/sort_tokens.jsonl");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("device: no CUDA device is visible to this process"), std::string::npos) << r.output;
  }
#else
  auto r = run("validate --config " + kDemo + " device=cuda");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("device: this fthost was built without CUDA"), std::string::npos) << r.output;
#endif
}

TEST(Cli, BrokenPluginDirFailsWithItsMessage) {
  auto r = run("plugins --plugin-dir " + std::string(FT_TEST_PLUGIN_ROOT) + "/wrong_fingerprint");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("was built for LibTorch 2.5.1"), std::string::npos) << r.output;
}

TEST(Cli, DemoTrainsAndLogsThroughPlugins) {
  const std::string dir = fttest::temp_dir();
  auto r = run("--config " + kDemo + " output_dir=" + dir + " dataset.source=" + FT_SOURCE_DIR +
               "/configs/demo/sort_tokens.jsonl" +
               " epochs=2 max_steps_per_epoch=20 log_every_n_steps=10 metric_logger._component_=" +
               "torchtune.training.metric_logging.DiskLogger metric_logger.log_dir='${output_dir}/logs' "
               "metric_logger.output_fmt=jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string text = fttest::read_file(dir + "/config.effective.toml");
  EXPECT_NE(text.find("max_steps_per_epoch = 20"), std::string::npos) << text;
  EXPECT_NE(text.find("log_dir = '" + dir + "/logs'"), std::string::npos) << text;  // interpolated
  // The effective config is a config: it loads again as it is.
  const auto again = run("validate --config " + dir + "/config.effective.toml");
  EXPECT_EQ(again.exit_code, 0) << again.output;
  std::vector<double> losses;
  for (auto& e : boost::filesystem::directory_iterator(dir + "/logs")) {
    std::ifstream in(e.path().string());
    for (std::string line; std::getline(in, line);) {
      EXPECT_EQ(line.rfind("{\"step\": ", 0), 0u) << line;
      const auto at = line.find("\"loss\": ");
      ASSERT_NE(at, std::string::npos) << line;
      losses.push_back(std::stod(line.substr(at + 8)));
    }
  }
  ASSERT_EQ(losses.size(), 4u);  // 2 epochs x 20 steps, every 10th
  // Uniform guessing over the 64-token vocabulary costs ln 64 = 4.16; the model must learn.
  EXPECT_LT(losses.back(), losses.front()) << r.output;
  EXPECT_LT(losses.back(), 3.5) << r.output;
  for (const char* epoch : {"epoch_0", "epoch_1"}) {
    EXPECT_TRUE(boost::filesystem::exists(dir + "/" + epoch + "/model.safetensors")) << epoch;
    EXPECT_TRUE(boost::filesystem::exists(dir + "/" + epoch + "/config.json")) << epoch;
  }
  // The saved checkpoint is a Hugging Face model directory fthost itself can start from.
  auto resumed = run(
      "--config " + kDemo + " output_dir=" + dir + "/again dataset.source=" + FT_SOURCE_DIR +
      "/configs/demo/sort_tokens.jsonl epochs=1 max_steps_per_epoch=2 checkpointer.checkpoint_dir=" + dir + "/epoch_1");
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("weights from the checkpoint"), std::string::npos) << resumed.output;
}

// torchtune's `seed: null` (here the key removed, which is the same): each run draws a seed,
// logs it and writes it to the effective config and the checkpoint; giving it back repeats the run.
TEST(Seed, UnsetSeedIsDrawnLoggedAndRepeatable) {
  struct Run {
    Result result;
    std::vector<double> losses;
    std::string dir;
  };
  int runs = 0;
  auto train = [&](const std::string& seed_arg) {
    Run r;
    r.dir = fttest::temp_dir() + "/seed_run_" + std::to_string(runs++);
    r.result = run("--config " + kDemo + " " + seed_arg + " output_dir=" + r.dir + " dataset.source=" + FT_SOURCE_DIR +
                   "/configs/demo/sort_tokens.jsonl" +
                   " epochs=1 max_steps_per_epoch=3 log_every_n_steps=1 ~lr_scheduler metric_logger._component_=" +
                   "torchtune.training.metric_logging.DiskLogger metric_logger.log_dir='${output_dir}/logs' "
                   "metric_logger.output_fmt=jsonl");
    for (auto& e : boost::filesystem::directory_iterator(r.dir + "/logs")) {
      std::ifstream in(e.path().string());
      for (std::string line; std::getline(in, line);)
        r.losses.push_back(std::stod(line.substr(line.find("\"loss\": ") + 8)));
    }
    return r;
  };
  const Run first = train("~seed");
  ASSERT_EQ(first.result.exit_code, 0) << first.result.output;
  ASSERT_EQ(first.losses.size(), 3u);
  std::smatch logged;
  ASSERT_TRUE(std::regex_search(first.result.output, logged,
                                std::regex(R"(seed: (\d+) \(drawn at random; set seed = (\d+) to repeat this run\))")))
      << first.result.output;
  EXPECT_EQ(logged[1].str(), logged[2].str());
  const std::string seed = logged[1].str();
  EXPECT_NE(fttest::read_file(first.dir + "/config.effective.toml").find("\nseed = " + seed + "\n"), std::string::npos);
  EXPECT_EQ(std::to_string(fthost::read_manifest(fthost::manifest_path_in(first.dir + "/epoch_0")).progress.seed),
            seed);
  // Resumed with the seed still unset, the run keeps the checkpoint's seed: no new draw, no warning.
  const auto resumed =
      run("--config " + first.dir + "/config.effective.toml ~seed epochs=2 resume_from_checkpoint=true");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(resumed.output.find("drawn at random"), std::string::npos) << resumed.output;
  EXPECT_EQ(resumed.output.find("config seed"), std::string::npos) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from"), std::string::npos) << resumed.output;
  // Its effective config (rewritten: epochs = 2) records that seed, not one drawn for the run.
  const std::string resumed_effective = fttest::read_file(first.dir + "/config.effective.toml");
  EXPECT_NE(resumed_effective.find("\nepochs = 2\n"), std::string::npos) << resumed_effective;
  EXPECT_NE(resumed_effective.find("\nseed = " + seed + "\n"), std::string::npos) << resumed_effective;

  const Run second = train("~seed");
  ASSERT_EQ(second.result.exit_code, 0) << second.result.output;
  EXPECT_NE(second.losses, first.losses);  // another seed, another random initialisation

  const Run repeated = train("seed=" + seed);
  ASSERT_EQ(repeated.result.exit_code, 0) << repeated.result.output;
  EXPECT_EQ(repeated.result.output.find("drawn at random"), std::string::npos);
  EXPECT_EQ(repeated.losses, first.losses);
}

}  // namespace
