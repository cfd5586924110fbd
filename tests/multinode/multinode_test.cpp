// Multi-node runs on simulated hosts (network namespaces joined by a bridge, netns_hosts.h):
// ranks on different hosts train to the same numbers as on one host, and a lost host or a cut
// link ends every surviving rank within distributed_timeout_s with an error naming what was lost,
// leaving nothing running.
#include "golden_cases.h"
#include "netns_hosts.h"
#include "resume_reference.h"
#include "test_helpers.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

namespace {

using namespace fttest::golden;
using fttest::NetnsHosts;
using fttest::resume::trajectory;
using Clock = std::chrono::steady_clock;

const char* kLoss = "torchtune.modules.loss.CEWithChunkedOutputLoss";
const char* kCase = "llama3_untied_ga2";

class MultiNode : public ::testing::Test {
 protected:
  void SetUp() override {
    static const std::optional<std::string> reason = NetnsHosts::unavailable_reason();
    if (reason) GTEST_SKIP() << "simulated hosts unavailable: " << *reason;
  }
};

// One process per rank, each with torchrun's variables, `ranks_per_host` on each host; the
// master is host 0. Logs: <out>/rank<r>.log.
std::vector<pid_t> start_ranks(const NetnsHosts& hosts, int ranks_per_host, const std::string& config,
                               const std::vector<std::string>& overrides, const std::string& out) {
  std::vector<pid_t> pids;
  const int world = hosts.count() * ranks_per_host;
  for (int h = 0; h < hosts.count(); ++h) {
    for (int l = 0; l < ranks_per_host; ++l) {
      const int rank = h * ranks_per_host + l;
      std::vector<std::string> argv{FTHOST_BINARY, "--config", config};
      argv.insert(argv.end(), overrides.begin(), overrides.end());
      pids.push_back(hosts.spawn(h, argv,
                                 {{"RANK", std::to_string(rank)},
                                  {"WORLD_SIZE", std::to_string(world)},
                                  {"LOCAL_RANK", std::to_string(l)},
                                  {"LOCAL_WORLD_SIZE", std::to_string(ranks_per_host)},
                                  {"GROUP_RANK", std::to_string(h)},
                                  {"MASTER_ADDR", NetnsHosts::address_of(0)},
                                  {"MASTER_PORT", "29500"}},
                                 out + "/rank" + std::to_string(rank) + ".log"));
    }
  }
  return pids;
}

// One fthost launcher per host (`fthost --nnodes N --node-rank R ...`), torchrun's options
// with dashes on even hosts and underscores on odd ones. Logs: <out>/node<h>.log.
std::vector<pid_t> start_launchers(const NetnsHosts& hosts, int ranks_per_host, const std::string& config,
                                   const std::vector<std::string>& overrides, const std::string& out,
                                   const std::vector<std::string>& launcher_options = {}) {
  std::vector<pid_t> pids;
  for (int h = 0; h < hosts.count(); ++h) {
    const std::string sep = h % 2 ? "_" : "-";
    std::vector<std::string> argv{FTHOST_BINARY,
                                  "--nnodes",
                                  std::to_string(hosts.count()),
                                  "--node" + sep + "rank",
                                  std::to_string(h),
                                  "--master" + sep + "addr",
                                  NetnsHosts::address_of(0),
                                  "--master" + sep + "port=29500",
                                  "--nproc" + sep + "per" + sep + "node",
                                  std::to_string(ranks_per_host)};
    argv.insert(argv.end(), launcher_options.begin(), launcher_options.end());
    argv.insert(argv.end(), {"--config", config});
    argv.insert(argv.end(), overrides.begin(), overrides.end());
    pids.push_back(hosts.spawn(h, argv, {}, out + "/node" + std::to_string(h) + ".log"));
  }
  return pids;
}

std::string node_logs(const std::string& out, int nodes) {
  std::string text;
  for (int h = 0; h < nodes; ++h)
    text += "--- node " + std::to_string(h) + "\n" + fttest::read_file(out + "/node" + std::to_string(h) + ".log");
  return text;
}

// Waits for every pid; their exit statuses.
std::vector<int> wait_all(const std::vector<pid_t>& pids) {
  std::vector<int> statuses;
  for (pid_t p : pids) {
    int status = 0;
    waitpid(p, &status, 0);
    statuses.push_back(status);
  }
  return statuses;
}

std::string logs_of(const std::string& out, int ranks) {
  std::string text;
  for (int r = 0; r < ranks; ++r)
    text += "--- rank " + std::to_string(r) + "\n" + fttest::read_file(out + "/rank" + std::to_string(r) + ".log");
  return text;
}

// The line of a rank's log that says why it stopped (for the test's output and the docs).
std::string failure_line(const std::string& log) {
  const auto at = log.find("failed: ");
  if (at == std::string::npos) return "(none)";
  const auto begin = log.rfind('\n', at) + 1;
  return log.substr(begin, log.find('\n', at) - begin);
}

// A run over several hosts against the same layout on one host (the fthost launcher over
// loopback): the same losses bitwise, the same final weights byte for byte, and both within the
// fixtures' tolerance of torchtune's single-process trajectory.
void expect_hosts_match_one_host(int hosts_count, int ranks_per_host, const std::vector<std::string>& overrides,
                                 int batch_size, bool with_launchers) {
  const std::string one_host = fttest::temp_dir();
  std::string joined;
  for (const auto& o : overrides) joined += " " + o;
  const auto single =
      fttest::run_fthost("--nproc-per-node " + std::to_string(hosts_count * ranks_per_host) + " --config " +
                         fttest::write_temp("run.toml", config_for(kCase, kLoss, one_host, batch_size, 1)) + joined);
  ASSERT_EQ(single.exit_code, 0) << single.output;

  const std::string across = fttest::temp_dir();
  NetnsHosts hosts(hosts_count);
  const std::string config = fttest::write_temp("run.toml", config_for(kCase, kLoss, across, batch_size, 1));
  const auto pids = with_launchers ? start_launchers(hosts, ranks_per_host, config, overrides, across)
                                   : start_ranks(hosts, ranks_per_host, config, overrides, across);
  const auto statuses = wait_all(pids);
  const std::string logs =
      with_launchers ? node_logs(across, hosts_count) : logs_of(across, hosts_count * ranks_per_host);
  for (int s : statuses) ASSERT_TRUE(WIFEXITED(s) && WEXITSTATUS(s) == 0) << logs;
  // Each rank bound the interface that reaches the master, not loopback (or the host name's address).
  EXPECT_NE(logs.find("this rank on " + NetnsHosts::address_of(0) + " (eth0)"), std::string::npos) << logs;
  std::string second_host = NetnsHosts::address_of(1) + ": rank";
  for (int l = 0; l < ranks_per_host; ++l)
    second_host += (l ? ", " : (ranks_per_host > 1 ? "s " : " ")) + std::to_string(ranks_per_host + l);
  EXPECT_NE(logs.find("2 hosts: "), std::string::npos) << logs;
  EXPECT_NE(logs.find(second_host), std::string::npos) << logs;

  expect_matches_golden(kCase, across, logs);
  const auto expected = trajectory(one_host);
  EXPECT_FALSE(expected.empty());
  EXPECT_EQ(trajectory(across), expected);
  const std::string weights = fttest::read_file(one_host + "/epoch_0/model.safetensors");
  EXPECT_FALSE(weights.empty());
  EXPECT_TRUE(fttest::read_file(across + "/epoch_0/model.safetensors") == weights)
      << "final weights differ between 1 host and " << hosts_count << " hosts";
}

TEST_F(MultiNode, TestBedLinksHostsAndRemovesThemAtTheEnd) {
  std::vector<std::string> names;
  {
    NetnsHosts hosts(3);
    for (int h = 0; h < 3; ++h) names.push_back(hosts.namespace_of(h));
    EXPECT_TRUE(hosts.reaches(1, 0));
    EXPECT_TRUE(hosts.reaches(2, 1));
    hosts.set_link(2, false);
    EXPECT_FALSE(hosts.reaches(2, 0));
    EXPECT_FALSE(hosts.reaches(0, 2));
    EXPECT_TRUE(hosts.reaches(0, 1));
    hosts.set_link(2, true);
    bool back = false;
    for (int i = 0; i < 50 && !(back = hosts.reaches(2, 0)); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(back);
    // A process left running on a host is killed with it.
    hosts.spawn(1, {"/bin/sleep", "600"}, {}, "/dev/null");
    for (int i = 0; i < 50 && hosts.processes_on(1).empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(hosts.processes_on(1).size(), 1u);
  }
  int status = 0;
  EXPECT_GT(waitpid(-1, &status, 0), 0);  // the sleep, killed
  EXPECT_TRUE(WIFSIGNALED(status));
  const std::string left = fttest::run_shell("ip netns list").output;
  for (const auto& name : names) EXPECT_EQ(left.find(name), std::string::npos) << left;
}

TEST_F(MultiNode, FsdpOverTwoHostsMatchesOneHost) {
  expect_hosts_match_one_host(2, 1, {"parallelism._component_=fthost.parallelism.fsdp"}, 2, false);
}

// HSDP with the replica dimension across hosts: each host holds one shard group. Started by one
// fthost launcher per host.
TEST_F(MultiNode, HsdpReplicasAcrossTwoHostsMatchOneHost) {
  expect_hosts_match_one_host(
      2, 2, {"parallelism._component_=fthost.parallelism.hsdp", "parallelism.data_parallel_replicate_dim=2"}, 1, true);
}

// torchrun's c10d rendezvous starts fthost on each host (`--no-python`). Its agents take
// MASTER_ADDR from the host name, which every namespace shares, so each names its own address
// (--local-addr) and node 0 hosts the rendezvous store (is_host).
TEST_F(MultiNode, TorchrunC10dRendezvousAcrossHosts) {
  const std::string torchrun = std::string(FT_SOURCE_DIR) + "/.venv/bin/torchrun";
  if (!boost::filesystem::exists(torchrun)) GTEST_SKIP() << "torchrun is not installed at " << torchrun;
  const std::string out = fttest::temp_dir();
  const std::string config = fttest::write_temp("run.toml", config_for(kCase, kLoss, out, 2, 1));
  NetnsHosts hosts(2);
  std::vector<pid_t> pids;
  for (int h = 0; h < 2; ++h)
    pids.push_back(hosts.spawn(h,
                               {torchrun, "--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                                "--rdzv-endpoint", NetnsHosts::address_of(0) + ":29400", "--rdzv-id", "multinode",
                                "--rdzv-conf", h == 0 ? "is_host=1" : "is_host=0", "--local-addr",
                                NetnsHosts::address_of(h), "--no-python", FTHOST_BINARY, "--config", config},
                               {}, out + "/node" + std::to_string(h) + ".log"));
  const auto statuses = wait_all(pids);
  const std::string logs = node_logs(out, 2);
  for (int s : statuses) ASSERT_TRUE(WIFEXITED(s) && WEXITSTATUS(s) == 0) << logs;
  EXPECT_NE(logs.find(NetnsHosts::address_of(1) + ": rank 1"), std::string::npos) << logs;
  expect_matches_golden(kCase, out, logs);
}

// SIGTERM to one host's launcher only (as a cluster signals one node's job step): it forwards
// it to its rank, the ranks of both hosts agree on the step and save it, both launchers exit 75,
// and the job resumed on both hosts ends exactly as the same layout never stopped on one host.
TEST_F(MultiNode, SignalToOneHostStopsEveryHostAtTheSameStep) {
  const std::vector<std::string> overrides{"parallelism._component_=fthost.parallelism.fsdp", "epochs=2"};
  const std::string one_host = fttest::temp_dir();
  const auto single = fttest::run_fthost("--nproc-per-node 2 --config " +
                                         fttest::write_temp("run.toml", config_for(kCase, kLoss, one_host, 2, 1)) +
                                         " " + overrides[0] + " " + overrides[1]);
  ASSERT_EQ(single.exit_code, 0) << single.output;

  const std::string across = fttest::temp_dir();
  const std::string config = fttest::write_temp("run.toml", config_for(kCase, kLoss, across, 2, 1));
  NetnsHosts hosts(2);
  {
    const auto pids = start_launchers(hosts, 1, config, overrides, across);
    while (read_jsonl(across + "/logs/metrics.jsonl").size() < 3 && hosts.processes_on(1).size() > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    kill(pids[1], SIGTERM);
    const auto statuses = wait_all(pids);
    const std::string logs = node_logs(across, 2);
    for (int s : statuses) ASSERT_TRUE(WIFEXITED(s) && WEXITSTATUS(s) == 75) << logs;
    EXPECT_NE(logs.find("launcher: received SIGTERM; forwarding it to every rank"), std::string::npos) << logs;
    EXPECT_NE(logs.find("is complete; exit status 75"), std::string::npos) << logs;
  }
  auto resume = overrides;
  resume.push_back("resume_from_checkpoint=true");
  const auto statuses = wait_all(start_launchers(hosts, 1, config, resume, across));
  const std::string logs = node_logs(across, 2);
  for (int s : statuses) ASSERT_TRUE(WIFEXITED(s) && WEXITSTATUS(s) == 0) << logs;
  EXPECT_EQ(trajectory(across), trajectory(one_host)) << "a step ran twice, not at all, or differently";
  EXPECT_TRUE(fttest::read_file(across + "/epoch_1/model.safetensors") ==
              fttest::read_file(one_host + "/epoch_1/model.safetensors"))
      << "final weights differ";
}

// The launcher's multi-node options are checked before anything starts, naming the option.
TEST(MultiNodeLaunch, InconsistentOptionsAreRefused) {
  const std::string config = fttest::write_temp("run.toml", config_for(kCase, kLoss, fttest::temp_dir(), 1, 1));
  struct Case {
    std::string options, expected;
  };
  for (const Case& c : {
           Case{"--nnodes 2 --node-rank 2 --master-addr 10.0.0.1 --master-port 29500",
                "--node-rank 2: expected 0 to 1"},
           Case{"--nnodes 2 --node_rank 1 --nproc-per-node 2", "every node needs --master-addr and --master-port"},
           Case{"--nnodes 0", "--nnodes: expected at least 1"},
           Case{"--node-rank 1 --master-addr 10.0.0.1", "launcher options: give them with --nproc-per-node"},
           Case{"--node-rank 1 --node_rank 1 --nnodes 2", "--node-rank and --node_rank are the same option"},
           Case{"--nnodes 2 --node-rank 0 --master-addr 10.0.0.1 --master-port 70000", "--master-port 70000"},
           Case{"--nproc-per-node 2 --max-restarts -1", "--max-restarts: expected 0 or more"},
       }) {
    const auto r = fttest::run_fthost(c.options + " --config " + config);
    EXPECT_EQ(r.exit_code, 2) << c.options << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << c.options << "\n" << r.output;
  }
}

// A job of 2 hosts x 1 rank that trains until stopped: long enough to fail mid-step.
struct LongJob {
  std::string out = fttest::temp_dir();
  std::unique_ptr<NetnsHosts> hosts = std::make_unique<NetnsHosts>(2);
  std::vector<pid_t> pids;
  explicit LongJob(int timeout_s) {
    const std::string config = fttest::write_temp("run.toml", config_for(kCase, kLoss, out, 1, 1));
    pids =
        start_ranks(*hosts, 1, config,
                    {"epochs=500", "~max_steps_per_epoch", "distributed_timeout_s=" + std::to_string(timeout_s)}, out);
  }
  bool wait_until_training() const {
    for (int i = 0; i < 600; ++i) {
      if (read_jsonl(out + "/logs/metrics.jsonl").size() >= 2) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  // Waits for `pid`; seconds since `since`, and its status.
  static std::pair<double, int> wait_for(pid_t pid, Clock::time_point since) {
    int status = 0;
    waitpid(pid, &status, 0);
    return {std::chrono::duration<double>(Clock::now() - since).count(), status};
  }
};

// A host's processes SIGKILLed mid-training: the kernel of the surviving host sees the
// connections reset, and the rank there fails at its next collective, naming the lost rank and
// host, long before the timeout.
TEST_F(MultiNode, KilledHostEndsTheSurvivorsNamingIt) {
  LongJob job(30);
  ASSERT_TRUE(job.wait_until_training()) << logs_of(job.out, 2);
  const auto killed_at = Clock::now();
  job.hosts->kill_host(1);
  const auto [seconds, status] = LongJob::wait_for(job.pids[0], killed_at);
  LongJob::wait_for(job.pids[1], killed_at);
  const std::string log = fttest::read_file(job.out + "/rank0.log");
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << log;
  EXPECT_NE(log.find("rank 1 on host " + NetnsHosts::address_of(1)), std::string::npos) << log;
  EXPECT_LT(seconds, 30.0) << log;
  std::printf("killed host: surviving rank exited %.2f s after the kill: %s\n", seconds, failure_line(log).c_str());
  EXPECT_TRUE(job.hosts->processes_on(0).empty());
  EXPECT_TRUE(job.hosts->processes_on(1).empty());
}

// The link cut mid-training: no connection is reset, nothing arrives; both sides' collectives
// time out after distributed_timeout_s and each rank names the host it cannot reach.
TEST_F(MultiNode, CutLinkEndsBothSidesWithinTheTimeout) {
  const int timeout_s = 5;
  LongJob job(timeout_s);
  ASSERT_TRUE(job.wait_until_training()) << logs_of(job.out, 2);
  const auto cut_at = Clock::now();
  job.hosts->set_link(1, false);
  const auto [seconds0, status0] = LongJob::wait_for(job.pids[0], cut_at);
  const auto [seconds1, status1] = LongJob::wait_for(job.pids[1], cut_at);
  const std::string logs = logs_of(job.out, 2);
  EXPECT_TRUE(WIFEXITED(status0) && WEXITSTATUS(status0) != 0) << logs;
  EXPECT_TRUE(WIFEXITED(status1) && WEXITSTATUS(status1) != 0) << logs;
  EXPECT_NE(fttest::read_file(job.out + "/rank0.log").find("rank 1 on host " + NetnsHosts::address_of(1)),
            std::string::npos)
      << logs;
  EXPECT_NE(fttest::read_file(job.out + "/rank1.log").find("rank 0 on host " + NetnsHosts::address_of(0)),
            std::string::npos)
      << logs;
  // The timeout, the probe of the other host (2 s) and the exit.
  EXPECT_LT(std::max(seconds0, seconds1), timeout_s + 10.0) << logs;
  std::printf("cut link: ranks exited %.2f s and %.2f s after the cut (distributed_timeout_s = %d): %s\n", seconds0,
              seconds1, timeout_s, failure_line(fttest::read_file(job.out + "/rank0.log")).c_str());
  EXPECT_TRUE(job.hosts->processes_on(0).empty());
  EXPECT_TRUE(job.hosts->processes_on(1).empty());
}

// `--max-restarts 1`: a rank killed mid-training makes both nodes' launchers restart their
// ranks, which resume from the newest complete checkpoint and end with the weights of a run that
// was never interrupted.
TEST_F(MultiNode, MaxRestartsResumeAndEndWithTheUninterruptedWeights) {
  // A kill can land while rank 0 waits for the lost rank's checkpoint shard, which only the
  // timeout ends: a short one keeps the test short.
  const std::vector<std::string> overrides{"epochs=6", "save_every_n_steps=4", "distributed_timeout_s=15"};
  const std::string reference = fttest::temp_dir();
  const auto single = fttest::run_fthost("--nproc-per-node 2 --config " +
                                         fttest::write_temp("run.toml", config_for(kCase, kLoss, reference, 1, 1)) +
                                         " epochs=6 save_every_n_steps=4");
  ASSERT_EQ(single.exit_code, 0) << single.output;

  const std::string out = fttest::temp_dir();
  NetnsHosts hosts(2);
  const auto launchers = start_launchers(hosts, 1, fttest::write_temp("run.toml", config_for(kCase, kLoss, out, 1, 1)),
                                         overrides, out, {"--max-restarts", "1"});
  // Kill host 1's rank (not its launcher) once a few checkpoints exist.
  pid_t victim = 0;
  for (int i = 0; i < 3000 && !victim; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (read_jsonl(out + "/logs/metrics.jsonl").size() < 10) continue;
    for (pid_t p : hosts.processes_on(1))
      if (p != launchers[1]) victim = p;
  }
  ASSERT_NE(victim, 0) << node_logs(out, 2);
  kill(victim, SIGKILL);
  const auto statuses = wait_all(launchers);
  const std::string logs = node_logs(out, 2);
  for (int s : statuses) ASSERT_TRUE(WIFEXITED(s) && WEXITSTATUS(s) == 0) << logs;
  EXPECT_NE(logs.find("restarting this node's ranks (restart 1 of 1)"), std::string::npos) << logs;
  EXPECT_NE(logs.find("resum"), std::string::npos) << logs;
  const std::string weights = fttest::read_file(reference + "/epoch_5/model.safetensors");
  EXPECT_FALSE(weights.empty());
  EXPECT_TRUE(fttest::read_file(out + "/epoch_5/model.safetensors") == weights) << logs;
  EXPECT_TRUE(hosts.processes_on(0).empty());
  EXPECT_TRUE(hosts.processes_on(1).empty());
}

// The newest checkpoint damaged (host 1's optimizer shard truncated, as a copy cut short
// leaves it): resume_from_checkpoint = true refuses it saying why, resumes from the one before,
// and the run ends bitwise where the undamaged run ended.
TEST_F(MultiNode, DamagedNewestCheckpointFallsBackToThePreviousOne) {
  NetnsHosts hosts(2);
  const std::string reference = fttest::temp_dir();
  const std::vector<std::string> saving{"save_every_n_steps=4"};
  auto pids = start_ranks(hosts, 1, fttest::write_temp("run.toml", config_for(kCase, kLoss, reference, 1, 1)), saving,
                          reference);
  for (int s : wait_all(pids)) ASSERT_TRUE(WIFEXITED(s) && WEXITSTATUS(s) == 0) << logs_of(reference, 2);

  const std::string out = fttest::temp_dir();
  for (const char* tag : {"step_4", "step_8"})
    boost::filesystem::create_directories(out + "/" + tag),
        fttest::run_shell("cp -r " + reference + "/" + tag + "/. " + out + "/" + tag);
  const std::string shard = out + "/step_8/recipe_state/optimizer-rank-00001-of-00002.safetensors";
  ASSERT_TRUE(boost::filesystem::exists(shard));
  boost::filesystem::resize_file(shard, boost::filesystem::file_size(shard) / 2);

  pids = start_ranks(hosts, 1, fttest::write_temp("run.toml", config_for(kCase, kLoss, out, 1, 1)),
                     {"save_every_n_steps=4", "resume_from_checkpoint=true"}, out);
  const auto statuses = wait_all(pids);
  const std::string logs = logs_of(out, 2);
  for (int s : statuses) ASSERT_TRUE(WIFEXITED(s) && WEXITSTATUS(s) == 0) << logs;
  EXPECT_NE(logs.find("refusing " + out + "/step_8: " + shard), std::string::npos) << logs;
  EXPECT_NE(logs.find("truncated"), std::string::npos) << logs;
  EXPECT_NE(logs.find("resuming from " + out + "/step_4 instead"), std::string::npos) << logs;
  const auto expected = trajectory(reference);
  const auto resumed = trajectory(out);
  ASSERT_EQ(resumed.size(), expected.size() - 4) << logs;
  EXPECT_TRUE(std::equal(resumed.begin(), resumed.end(), expected.begin() + 4)) << logs;
  const std::string weights = fttest::read_file(reference + "/epoch_0/model.safetensors");
  EXPECT_FALSE(weights.empty());
  EXPECT_TRUE(fttest::read_file(out + "/epoch_0/model.safetensors") == weights) << logs;
}

// A host killed while an asynchronous checkpoint save is in flight (its staging directory
// exists): no visible checkpoint is incomplete, and resuming from the newest one ends bitwise
// where an uninterrupted run ends.
TEST_F(MultiNode, HostKilledDuringAsyncSaveLeavesTheLastCheckpointIntact) {
  const std::vector<std::string> saving{"epochs=3", "save_every_n_steps=2", "enable_async_checkpointing=true",
                                        "distributed_timeout_s=20"};
  NetnsHosts hosts(2);
  const std::string reference = fttest::temp_dir();
  auto pids = start_ranks(hosts, 1, fttest::write_temp("run.toml", config_for(kCase, kLoss, reference, 1, 1)), saving,
                          reference);
  for (int s : wait_all(pids)) ASSERT_TRUE(WIFEXITED(s) && WEXITSTATUS(s) == 0) << logs_of(reference, 2);

  const std::string out = fttest::temp_dir();
  const std::string config = fttest::write_temp("run.toml", config_for(kCase, kLoss, out, 1, 1));
  pids = start_ranks(hosts, 1, config, saving, out);
  // Kill host 1 as soon as a save is being written after the first few steps.
  bool killed = false;
  Clock::time_point killed_at;
  for (int i = 0; i < 20000 && !killed; ++i) {
    if (read_jsonl(out + "/logs/metrics.jsonl").size() >= 6) {
      for (const auto& entry : boost::filesystem::directory_iterator(out)) {
        if (entry.path().filename().string().find(".partial-") == std::string::npos) continue;
        killed_at = Clock::now();
        hosts.kill_host(1);
        killed = true;
        break;
      }
    }
    if (!killed) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const auto statuses = wait_all(pids);
  ASSERT_TRUE(killed) << logs_of(out, 2);
  const double seconds = std::chrono::duration<double>(Clock::now() - killed_at).count();
  std::printf("host killed during an async save: surviving rank exited %.2f s after the kill: %s\n", seconds,
              failure_line(fttest::read_file(out + "/rank0.log")).c_str());
  // At its next collective rank 0 sees the reset connection at once; when it is instead waiting
  // for the lost rank's files of a save (or for that save before the next one), it waits
  // distributed_timeout_s (20 s) for them.
  EXPECT_LT(seconds, 25.0);
  if (WIFEXITED(statuses[0]) && WEXITSTATUS(statuses[0]) == 0)
    GTEST_SKIP() << "the run finished before the kill reached it";
  // Every visible checkpoint is complete: a manifest, and the files it lists with their sizes.
  int visible = 0;
  for (const auto& entry : boost::filesystem::directory_iterator(out)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) != 0 && name.rfind("epoch_", 0) != 0) continue;
    ++visible;
    const std::string manifest = entry.path().string() + "/recipe_state/manifest.json";
    ASSERT_TRUE(boost::filesystem::exists(manifest)) << name;
    // Named: items() refers into the json, which a temporary would free before the loop runs.
    const auto listed = read_json(manifest);
    for (const auto& [file, size] : listed.at("files").items())
      EXPECT_EQ(boost::filesystem::file_size(entry.path() / file), size.get<std::uintmax_t>()) << name << "/" << file;
  }
  EXPECT_GT(visible, 0) << logs_of(out, 2);

  std::vector<std::string> resuming = saving;
  resuming.push_back("resume_from_checkpoint=true");
  pids = start_ranks(hosts, 1, config, resuming, out);
  const auto resumed = wait_all(pids);
  const std::string logs = logs_of(out, 2);
  for (int s : resumed) ASSERT_TRUE(WIFEXITED(s) && WEXITSTATUS(s) == 0) << logs;
  const std::string weights = fttest::read_file(reference + "/epoch_2/model.safetensors");
  EXPECT_FALSE(weights.empty());
  EXPECT_TRUE(fttest::read_file(out + "/epoch_2/model.safetensors") == weights) << logs;
  for (const auto& entry : boost::filesystem::directory_iterator(out))
    EXPECT_EQ(entry.path().filename().string().find(".partial-"), std::string::npos) << "left behind: " << entry.path();
}

}  // namespace
