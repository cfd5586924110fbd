// Multi-node runs on simulated hosts (network namespaces joined by a bridge, netns_hosts.h):
// ranks on different hosts train to the same numbers as on one host, and a lost host or a cut
// link ends every surviving rank within distributed_timeout_s with an error naming what was lost,
// leaving nothing running.
#include "golden_cases.h"
#include "netns_hosts.h"
#include "test_helpers.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <memory>
#include <thread>

namespace {

using namespace fttest::golden;
using fttest::NetnsHosts;
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

// The trajectory's numbers, step by step, as logged.
std::vector<std::string> trajectory(const std::string& out) {
  std::vector<std::string> steps;
  for (const json& l : read_jsonl(out + "/logs/metrics.jsonl")) {
    json kept;
    for (const char* key : {"step", "loss", "lr", "grad_norm", "num_tokens"})
      if (l.contains(key)) kept[key] = l.at(key);
    steps.push_back(kept.dump());
  }
  return steps;
}

// A run over several hosts against the same layout on one host (the fthost launcher over
// loopback): the same losses bitwise, the same final weights byte for byte, and both within the
// fixtures' tolerance of torchtune's single-process trajectory.
void expect_hosts_match_one_host(int hosts_count, int ranks_per_host, const std::vector<std::string>& overrides,
                                 int batch_size) {
  const std::string one_host = fttest::temp_dir();
  std::string joined;
  for (const auto& o : overrides) joined += " " + o;
  const auto single =
      fttest::run_fthost("--nproc-per-node " + std::to_string(hosts_count * ranks_per_host) + " --config " +
                         fttest::write_temp("run.toml", config_for(kCase, kLoss, one_host, batch_size, 1)) + joined);
  ASSERT_EQ(single.exit_code, 0) << single.output;

  const std::string across = fttest::temp_dir();
  NetnsHosts hosts(hosts_count);
  const auto pids =
      start_ranks(hosts, ranks_per_host,
                  fttest::write_temp("run.toml", config_for(kCase, kLoss, across, batch_size, 1)), overrides, across);
  const auto statuses = wait_all(pids);
  const std::string logs = logs_of(across, hosts_count * ranks_per_host);
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
  expect_hosts_match_one_host(2, 1, {"parallelism._component_=fthost.parallelism.fsdp"}, 2);
}

// HSDP with the replica dimension across hosts: each host holds one shard group.
TEST_F(MultiNode, HsdpReplicasAcrossTwoHostsMatchOneHost) {
  expect_hosts_match_one_host(
      2, 2, {"parallelism._component_=fthost.parallelism.hsdp", "parallelism.data_parallel_replicate_dim=2"}, 1);
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

}  // namespace
