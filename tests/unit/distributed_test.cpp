// Distributed training with real ranks over loopback (Gloo): every strategy and launcher must
// reproduce torchtune's single-process golden trajectories, shard what it claims to shard, and
// turn a dead rank into a prompt, clear failure on the others.
#include "config/distributed_environment.h"
#include "golden_cases.h"
#include "test_helpers.h"

#include <boost/filesystem.hpp>

#include <chrono>
#include <csignal>
#include <map>
#include <regex>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

namespace {

using namespace fttest::golden;

const char* kLoss = "torchtune.modules.loss.CEWithChunkedOutputLoss";

// The same samples per optimizer step as the case's single-rank run: per-rank micro-batches of
// `batch_size` x `grad_accum` over `ranks` ranks.
std::string golden_config(const std::string& case_name, const std::string& out, int batch_size, int grad_accum) {
  return fttest::write_temp("run.toml", config_for(case_name, kLoss, out, batch_size, grad_accum));
}

struct LaunchCase {
  std::string name;  // test name
  std::string golden;
  int ranks;
  int batch_size;
  int grad_accum;
  std::string overrides;
};

class DistributedGolden : public ::testing::TestWithParam<LaunchCase> {};

TEST_P(DistributedGolden, MatchesSingleProcessTorchtune) {
  const LaunchCase& c = GetParam();
  const std::string out = fttest::temp_dir();
  const auto r = fttest::run_fthost("--nproc-per-node " + std::to_string(c.ranks) + " --config " +
                                    golden_config(c.golden, out, c.batch_size, c.grad_accum) + " " + c.overrides);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_matches_golden(c.golden, out, r.output);
}

// llama3_untied_ga2 and qwen2_tied_ga2_clip step over 2 micro-batches of 2 samples.
INSTANTIATE_TEST_SUITE_P(
    Strategies, DistributedGolden,
    ::testing::Values(
        LaunchCase{"fsdp_2ranks", "llama3_untied_ga2", 2, 2, 1, "parallelism._component_=fthost.parallelism.fsdp"},
        LaunchCase{"fsdp_2ranks_accumulating", "llama3_untied_ga2", 2, 1, 2,
                   "parallelism._component_=fthost.parallelism.fsdp"},
        LaunchCase{"fsdp_prefetch", "llama3_untied_ga2", 2, 1, 2,
                   "parallelism._component_=fthost.parallelism.fsdp parallelism.prefetch=true"},
        LaunchCase{"fsdp_prefetch_activation_checkpointing", "llama3_untied_ga2", 2, 2, 1,
                   "parallelism._component_=fthost.parallelism.fsdp parallelism.prefetch=true "
                   "enable_activation_checkpointing=true"},
        LaunchCase{"fsdp_prefetch_keep_gathered_clipped", "qwen2_tied_ga2_clip", 2, 2, 1,
                   "parallelism._component_=fthost.parallelism.fsdp parallelism.prefetch=true "
                   "parallelism.reshard_after_forward=false"},
        LaunchCase{"fsdp_keep_gathered", "llama3_untied_ga2", 2, 2, 1,
                   "parallelism._component_=fthost.parallelism.fsdp parallelism.reshard_after_forward=false"},
        LaunchCase{"fsdp_tied_clipped", "qwen2_tied_ga2_clip", 2, 2, 1, ""},  // default: fsdp, as torchtune
        LaunchCase{"fsdp_custom_sharded_layers", "llama3_untied_ga2", 2, 2, 1,
                   "'custom_sharded_layers=[\"tok_embeddings\", \"output\"]'"},
        LaunchCase{"fsdp_tied_custom_sharded_layers", "qwen2_tied_ga2_clip", 2, 2, 1,
                   "'custom_sharded_layers=[\"tok_embeddings\", \"output\"]'"},
        LaunchCase{"fsdp_keep_gathered_accumulating_custom_sharded_layers", "llama3_untied_ga2", 2, 1, 2,
                   "parallelism._component_=fthost.parallelism.fsdp parallelism.reshard_after_forward=false "
                   "'parallelism.custom_sharded_layers=[\"tok_embeddings\", \"output\"]'"},
        LaunchCase{"hsdp_2x2_custom_sharded_layers", "llama3_untied_ga2", 4, 1, 1,
                   "parallelism._component_=fthost.parallelism.hsdp parallelism.data_parallel_replicate_dim=2 "
                   "'parallelism.custom_sharded_layers=[\"tok_embeddings\", \"output\"]'"},
        LaunchCase{"ddp_2ranks", "llama3_untied_ga2", 2, 2, 1, "parallelism._component_=fthost.parallelism.ddp"},
        LaunchCase{"ddp_accumulating_clipped", "qwen2_tied_ga2_clip", 2, 1, 2,
                   "parallelism._component_=fthost.parallelism.ddp"},
        LaunchCase{"hsdp_2x2", "llama3_untied_ga2", 4, 1, 1,
                   "parallelism._component_=fthost.parallelism.hsdp parallelism.data_parallel_replicate_dim=2"}),
    [](const auto& param_info) { return param_info.param.name; });

// torchtune's top-level keys configure the default FSDP (data_parallel_replicate_dim -> HSDP mesh).
TEST(Distributed, TorchtuneTopLevelKeysConfigureTheMesh) {
  const std::string out = fttest::temp_dir();
  auto r = fttest::run_fthost("--nproc-per-node 4 --config " + golden_config("llama3_untied_ga2", out, 1, 1) +
                              " data_parallel_replicate_dim=2 fsdp_reshard_after_forward=false");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string effective = fttest::read_file(out + "/config.effective.toml");
  EXPECT_NE(effective.find("data_parallel_replicate_dim = 2"), std::string::npos) << effective;
  EXPECT_NE(effective.find("reshard_after_forward = false"), std::string::npos) << effective;
  EXPECT_NE(r.output.find("over 2 shard ranks x 2 replicas"), std::string::npos) << r.output;
  expect_matches_golden("llama3_untied_ga2", out, r.output);
}

// FSDP keeps about 1/N of every unit on each rank (padding to a multiple of N aside).
TEST(Distributed, FsdpHoldsHalfTheParametersPerRank) {
  const std::string out = fttest::temp_dir();
  auto r = fttest::run_fthost("--nproc-per-node 2 --config " + golden_config("llama3_untied_ga2", out, 2, 1));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("this rank holds (\\d+) of (\\d+) parameter bytes")))
      << r.output;
  const double held = std::stod(m[1]), full = std::stod(m[2]);
  EXPECT_GE(held / full, 0.5);
  EXPECT_LT(held / full, 0.51);
}

// custom_sharded_layers: the embedding and output projection become sharding units of their own.
// The arithmetic is the same (the same gathered values feed the same operations), so the losses
// and final weights are bitwise those of the run without it, while rank 0 holds fewer gathered
// bytes at its peak: the vocab-sized matrices are no longer gathered with the root for the
// whole micro-batch, on top of a layer.
struct ShardedRun {
  std::string metrics;
  std::string weights;
  std::string weights_path;
  long long peak_gathered_bytes = -1;
  std::string output;
};

ShardedRun run_sharded(const std::string& golden, const std::string& loss, const std::string& overrides) {
  const std::string out = fttest::temp_dir();
  const std::string config = fttest::write_temp("run.toml", config_for(golden, loss, out, 2, 1));
  const auto r = fttest::run_fthost("--nproc-per-node 2 --config " + config +
                                    " parallelism._component_=fthost.parallelism.fsdp " + overrides);
  ShardedRun run;
  run.output = r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  if (r.exit_code != 0) return run;
  run.metrics = fttest::read_file(out + "/logs/metrics.jsonl");
  run.weights_path = out + "/epoch_0/model.safetensors";
  run.weights = fttest::read_file(run.weights_path);
  std::smatch m;
  if (std::regex_search(
          r.output, m,
          std::regex("at most (\\d+) bytes of gathered parameters were held at once on rank 0 while training")))
    run.peak_gathered_bytes = std::stoll(m[1]);
  return run;
}

// `clipped`: the gradient is clipped by its norm, a float sum over each rank's shard whose layout
// the extra units change, so the weights then agree to rounding rather than bitwise.
void expect_separate_units_change_only_memory(const std::string& golden, const std::string& loss, bool clipped) {
  const ShardedRun plain = run_sharded(golden, loss, "");
  const ShardedRun separate =
      run_sharded(golden, loss, "'parallelism.custom_sharded_layers=[\"tok_embeddings\", \"output\"]'");
  ASSERT_FALSE(plain.metrics.empty());
  ASSERT_FALSE(separate.metrics.empty());
  // The logged losses and learning rates, digit for digit (timings aside).
  const std::regex numbers("\"(loss|lr)\": ?[-0-9.e+]+");
  auto logged = [&](const std::string& text) {
    std::string all;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), numbers); it != std::sregex_iterator(); ++it)
      all += it->str() + "\n";
    return all;
  };
  EXPECT_FALSE(logged(plain.metrics).empty()) << plain.metrics;
  EXPECT_EQ(logged(separate.metrics), logged(plain.metrics));
  if (!clipped) {
    EXPECT_TRUE(separate.weights == plain.weights) << "final weights differ";
  } else {
    const auto a = read_f32_safetensors(plain.weights_path), b = read_f32_safetensors(separate.weights_path);
    ASSERT_EQ(a.size(), b.size());
    for (const auto& [name, values] : a) {
      ASSERT_EQ(values.size(), b.at(name).size()) << name;
      for (std::size_t i = 0; i < values.size(); ++i) EXPECT_NEAR(values[i], b.at(name)[i], 1e-6) << name << " " << i;
    }
  }
  // The gradient norm: the same sum in another order.
  const std::regex norms("\"grad_norm\": ?([-0-9.e+]+)");
  std::vector<double> plain_norms, separate_norms;
  for (auto it = std::sregex_iterator(plain.metrics.begin(), plain.metrics.end(), norms); it != std::sregex_iterator();
       ++it)
    plain_norms.push_back(std::stod((*it)[1]));
  for (auto it = std::sregex_iterator(separate.metrics.begin(), separate.metrics.end(), norms);
       it != std::sregex_iterator(); ++it)
    separate_norms.push_back(std::stod((*it)[1]));
  ASSERT_EQ(plain_norms.size(), separate_norms.size());
  for (std::size_t i = 0; i < plain_norms.size(); ++i)
    EXPECT_NEAR(plain_norms[i], separate_norms[i], 1e-6 * plain_norms[i]);
  ASSERT_GT(plain.peak_gathered_bytes, 0) << plain.output;
  ASSERT_GT(separate.peak_gathered_bytes, 0) << separate.output;
  EXPECT_LT(separate.peak_gathered_bytes, plain.peak_gathered_bytes);
}

TEST(Distributed, CustomShardedLayersChangeOnlyPeakGatheredBytes) {
  expect_separate_units_change_only_memory("llama3_untied_ga2", kLoss, /*clipped=*/false);
}

// The loss projects the hidden state itself through model.output_weight(), after the forward.
TEST(Distributed, CustomShardedLayersWithLinearCrossEntropy) {
  expect_separate_units_change_only_memory("llama3_untied_ga2", "torchtune.modules.loss.LinearCrossEntropyLoss",
                                           /*clipped=*/false);
}

// A tied model's output is the embedding: "output" names no module of its own, as in torchtune.
TEST(Distributed, CustomShardedLayersOnATiedModel) {
  expect_separate_units_change_only_memory("qwen2_tied_ga2_clip", kLoss, /*clipped=*/true);
}

TEST(Distributed, CustomShardedLayersRefuseAnUnknownModule) {
  const std::string out = fttest::temp_dir();
  const auto r = fttest::run_fthost("--nproc-per-node 2 --config " + golden_config("llama3_untied_ga2", out, 2, 1) +
                                    " 'custom_sharded_layers=[\"tok_embeddings\", \"lm_head\"]'");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("custom_sharded_layers"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"lm_head\""), std::string::npos) << r.output;
}

// torchrun's way: the caller starts every rank with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
TEST(Distributed, TorchrunStyleEnvironment) {
  const std::string out = fttest::temp_dir();
  const std::string config = golden_config("llama3_untied_ga2", out, 2, 1);
  const int port = 29500 + static_cast<int>(getpid() % 2000);
  std::string cmd;
  for (int rank = 0; rank < 2; ++rank)
    cmd += "RANK=" + std::to_string(rank) + " WORLD_SIZE=2 LOCAL_RANK=" + std::to_string(rank) +
           " LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " " + FTHOST_BINARY +
           " --config " + config + " > " + out + "/rank" + std::to_string(rank) + ".log 2>&1 & p" +
           std::to_string(rank) + "=$!; ";
  // By pid: bash keeps a finished child's status for `wait $pid`, not always for `wait %job`.
  cmd += "wait $p0; a=$?; wait $p1; b=$?; exit $((a + b))";
  const int status = std::system(("bash -c '" + cmd + "'").c_str());
  const std::string log0 = fttest::read_file(out + "/rank0.log");
  ASSERT_EQ(WEXITSTATUS(status), 0) << log0 << fttest::read_file(out + "/rank1.log");
  EXPECT_NE(log0.find("rank 0/2: connected"), std::string::npos) << log0;
  expect_matches_golden("llama3_untied_ga2", out, log0);
}

std::optional<std::string> from(const std::map<std::string, std::string>& vars, const std::string& name) {
  auto it = vars.find(name);
  if (it == vars.end()) return std::nullopt;
  return it->second;
}

TEST(DistributedEnvironment, ReadsTorchrunSlurmAndNothing) {
  using fthost::read_distributed_environment;
  auto none = read_distributed_environment([](const std::string&) { return std::nullopt; });
  EXPECT_EQ(none.world_size, 1);
  EXPECT_EQ(none.launcher, "none");

  const std::map<std::string, std::string> torchrun = {{"RANK", "3"},
                                                       {"WORLD_SIZE", "8"},
                                                       {"LOCAL_RANK", "1"},
                                                       {"LOCAL_WORLD_SIZE", "2"},
                                                       {"MASTER_ADDR", "10.0.0.7"},
                                                       {"MASTER_PORT", "29600"}};
  auto t = read_distributed_environment([&](const std::string& n) { return from(torchrun, n); });
  EXPECT_EQ(t.launcher, "torchrun");
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.world_size, 8);
  EXPECT_EQ(t.local_rank, 1);
  EXPECT_EQ(t.local_world_size, 2);
  EXPECT_EQ(t.master_addr, "10.0.0.7");
  EXPECT_EQ(t.master_port, 29600);

  // What srun sets for task 5 of 6, 3 tasks per node on 2 nodes.
  const std::map<std::string, std::string> slurm = {{"SLURM_PROCID", "5"},
                                                    {"SLURM_NTASKS", "6"},
                                                    {"SLURM_LOCALID", "2"},
                                                    {"SLURM_TASKS_PER_NODE", "3(x2)"},
                                                    {"SLURM_JOB_NODELIST", "gpu-[017-018]"}};
  auto s = read_distributed_environment([&](const std::string& n) { return from(slurm, n); });
  EXPECT_EQ(s.launcher, "slurm");
  EXPECT_EQ(s.rank, 5);
  EXPECT_EQ(s.world_size, 6);
  EXPECT_EQ(s.local_rank, 2);
  EXPECT_EQ(s.local_world_size, 3);
  EXPECT_EQ(s.master_addr, "gpu-017");
  EXPECT_EQ(s.master_port, 29500);

  EXPECT_EQ(fthost::first_slurm_host("a1,b[1-3]"), "a1");
  EXPECT_EQ(fthost::first_slurm_host("node[003,007-009],x"), "node003");
  EXPECT_EQ(fthost::first_slurm_host("single"), "single");

  const std::map<std::string, std::string> bad = {{"RANK", "2"}, {"WORLD_SIZE", "2"}};
  EXPECT_NE(fttest::error_of([&] {
              read_distributed_environment([&](const std::string& n) { return from(bad, n); });
            }).find("RANK 2 is not below WORLD_SIZE 2"),
            std::string::npos);
  const std::map<std::string, std::string> junk = {{"RANK", "x"}, {"WORLD_SIZE", "2"}};
  EXPECT_NE(fttest::error_of([&] {
              read_distributed_environment([&](const std::string& n) { return from(junk, n); });
            }).find("RANK=\"x\": expected a non-negative integer"),
            std::string::npos);
}

// A long run whose rank 1 is killed: the launcher stops rank 0 and says which rank died.
TEST(Distributed, LauncherReportsADeadRankAndStopsTheOthers) {
  const std::string out = fttest::temp_dir();
  const std::string config = golden_config("llama3_untied_ga2", out, 1, 1);
  const pid_t launcher = fork();
  if (launcher == 0) {
    const std::string log = out + "/launcher.log";
    freopen(log.c_str(), "w", stdout);
    dup2(fileno(stdout), 2);
    execl(FTHOST_BINARY, FTHOST_BINARY, "--nproc-per-node", "2", "--config", config.c_str(), "epochs=50",
          "~max_steps_per_epoch", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until both ranks train, then kill rank 1 (the launcher's younger child).
  std::string rank1;
  for (int i = 0; i < 300 && rank1.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (fttest::read_file(out + "/logs/metrics.jsonl").empty()) continue;
    FILE* p = popen(("pgrep -n -P " + std::to_string(launcher)).c_str(), "r");
    char buf[32] = {};
    if (fgets(buf, sizeof buf, p)) rank1 = buf;
    pclose(p);
  }
  ASSERT_FALSE(rank1.empty()) << fttest::read_file(out + "/launcher.log");
  const auto killed_at = std::chrono::steady_clock::now();
  kill(std::stoi(rank1), SIGKILL);
  int status = 0;
  waitpid(launcher, &status, 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  const std::string log = fttest::read_file(out + "/launcher.log");
  ASSERT_TRUE(WIFEXITED(status)) << log;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGKILL) << log;
  EXPECT_NE(log.find("rank 1 (pid " + std::to_string(std::stoi(rank1)) + ") was killed by signal 9"), std::string::npos)
      << log;
  EXPECT_LT(seconds, 15.0) << log;
}

// Without a launcher to stop it, the surviving rank fails on its own: the next collective
// errors (the peer's connection is gone) within the configured timeout, naming the rank.
TEST(Distributed, SurvivingRankFailsWithinTheTimeout) {
  const std::string out = fttest::temp_dir();
  const std::string config = golden_config("llama3_untied_ga2", out, 1, 1);
  const int port = 31500 + static_cast<int>(getpid() % 2000);
  std::vector<pid_t> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    const pid_t pid = fork();
    if (pid == 0) {
      const std::string log = out + "/rank" + std::to_string(rank) + ".log";
      freopen(log.c_str(), "w", stdout);
      dup2(fileno(stdout), 2);
      setenv("RANK", std::to_string(rank).c_str(), 1);
      setenv("WORLD_SIZE", "2", 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      execl(FTHOST_BINARY, FTHOST_BINARY, "--config", config.c_str(), "epochs=50", "~max_steps_per_epoch",
            "distributed_timeout_s=20", static_cast<char*>(nullptr));
      _exit(127);
    }
    ranks.push_back(pid);
  }
  for (int i = 0; i < 300 && fttest::read_file(out + "/logs/metrics.jsonl").empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto killed_at = std::chrono::steady_clock::now();
  kill(ranks[1], SIGKILL);
  int status = 0;
  waitpid(ranks[1], &status, 0);
  waitpid(ranks[0], &status, 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  const std::string log = fttest::read_file(out + "/rank0.log");
  ASSERT_TRUE(WIFEXITED(status)) << log;
  EXPECT_NE(WEXITSTATUS(status), 0) << log;
  EXPECT_NE(log.find("rank 0: "), std::string::npos) << log;
  // The cause first (Gloo's own words), then what it usually means.
  EXPECT_NE(log.find("rank 0: gloo "), std::string::npos) << log;
  EXPECT_NE(log.find("another rank exited or did not answer within 20 s"), std::string::npos) << log;
  EXPECT_LT(seconds, 25.0) << log;
}

}  // namespace
