// Preemption through the fthost binary: a stop signal at a random step saves exactly the step
// the run is on and exits with status 75, and the resumed run equals the uninterrupted one bit
// for bit; a signal to one rank stops every rank at the same step; a signal before the first
// step saves nothing; a stop save that fails leaves the newest complete checkpoint as it was.
// Then the handlers themselves: a second signal and the grace period end the process at once.
#include "resume_reference.h"
#include "running_fthost.h"
#include "test_helpers.h"
#include "train/preemption_signals.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using namespace fttest::resume;
using fttest::RunningFthost;
using Clock = std::chrono::steady_clock;

constexpr int kStoppedExit = 75;  // docs/checkpointing.md: EX_TEMPFAIL

class Preemption : public ResumeReference {};

void wait_for_lines(RunningFthost& run, const std::string& path, std::size_t lines) {
  while (run.running() && lines_in(path) < lines) std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

// The checkpoint a stop after global step `step` writes: an epoch's last step is its epoch_N.
std::string stop_tag(int step) {
  constexpr int kStepsPerEpoch = kTotalSteps / 2;
  return step % kStepsPerEpoch == 0 ? "epoch_" + std::to_string(step / kStepsPerEpoch - 1)
                                    : "step_" + std::to_string(step);
}

std::set<std::string> checkpoints_in(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& name : entries_of(dir))
    if (name.rfind("step_", 0) == 0 || name.rfind("epoch_", 0) == 0) names.insert(name);
  return names;
}

// SIGTERM, or SLURM's SIGUSR1 during background saves, once a random number of steps is logged:
// the run saves the step it is on (no later, no earlier: resumed, no step runs twice), exits 75,
// and the resumed run logs the reference's rows and ends with its weights, bit for bit.
TEST_F(Preemption, SignalAtARandomStepSavesThatStepAndResumesBitwise) {
  struct Variant {
    unsigned seed;
    int signal;
    std::string options;
  };
  for (const Variant& v :
       {Variant{1, SIGTERM, ""}, Variant{2, SIGUSR1, " save_every_n_steps=3 enable_async_checkpointing=true"}}) {
    SCOPED_TRACE("seed " + std::to_string(v.seed));
    std::mt19937 rng(v.seed);
    const auto signal_after = std::uniform_int_distribution<std::size_t>(1, kTotalSteps - 3)(rng);
    const std::string out = fttest::temp_dir();
    const std::string log = out + "/run.log";
    const std::string args = "--config " + config_in(out) + kShape + v.options;
    {
      RunningFthost run(args, log);
      wait_for_lines(run, metrics_of(out), signal_after);
      run.signal(v.signal);
      ASSERT_EQ(run.wait(), kStoppedExit) << fttest::read_file(log);
    }
    const std::string text = fttest::read_file(log);
    const auto rows = read_jsonl(metrics_of(out));
    ASSERT_FALSE(rows.empty()) << text;
    const int stopped_at = rows.back().at("step").get<int>();
    ASSERT_GE(stopped_at, static_cast<int>(signal_after)) << text;
    ASSERT_LT(stopped_at, kTotalSteps) << text;
    const std::string tag = stop_tag(stopped_at);
    EXPECT_NE(text.find("preempted at step " + std::to_string(stopped_at) + " of " + std::to_string(kTotalSteps) +
                        ": checkpoint " + out + "/" + tag + " is complete; exit status 75"),
              std::string::npos)
        << text;
    EXPECT_TRUE(fs::exists(out + "/" + tag + "/recipe_state/manifest.json")) << text;
    EXPECT_EQ(hidden_entries_of(out), std::set<std::string>{});

    auto resumed = fttest::run_fthost(args + " resume_from_checkpoint=true");
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("resumed from " + out + "/" + tag + ": step " + std::to_string(stopped_at)),
              std::string::npos)
        << resumed.output;
    const auto all = read_jsonl(metrics_of(out));
    EXPECT_EQ(all.size(), static_cast<std::size_t>(kTotalSteps)) << "a step ran twice or not at all";
    expect_same_trajectory(*reference_, all, resumed.output);
    EXPECT_TRUE(final_weights(out) == final_weights(*reference_dir_)) << "final weights differ";
  }
}

// Two FSDP ranks, SIGTERM to rank 1 alone (not the launcher): both agree on the step, save it
// (each its optimizer shard), the launcher exits 75, and the resumed pair ends as a pair never
// stopped.
TEST(PreemptionSharded, OneRankSignalledStopsBothRanksAtTheSameStep) {
  const std::string fsdp = " --nproc-per-node 2 batch_size=1 parallelism._component_=fthost.parallelism.fsdp";
  const std::string full = fttest::temp_dir();
  auto reference = fttest::run_fthost("--config " + config_in(full) + fsdp + kShape);
  ASSERT_EQ(reference.exit_code, 0) << reference.output;

  const std::string out = fttest::temp_dir();
  const std::string log = out + "/run.log";
  const std::string args = "--config " + config_in(out) + fsdp + kShape;
  {
    RunningFthost launcher(args, log);
    wait_for_lines(launcher, metrics_of(out), 4);
    std::ifstream children("/proc/" + std::to_string(launcher.pid()) + "/task/" + std::to_string(launcher.pid()) +
                           "/children");
    pid_t rank0 = 0, rank1 = 0;
    children >> rank0 >> rank1;  // in the order the launcher started them
    ASSERT_GT(rank1, 0) << fttest::read_file(log);
    ::kill(rank1, SIGTERM);
    ASSERT_EQ(launcher.wait(), kStoppedExit) << fttest::read_file(log);
  }
  const std::string text = fttest::read_file(log);
  const int stopped_at = read_jsonl(metrics_of(out)).back().at("step").get<int>();
  EXPECT_NE(text.find("[rank 0] warning stop requested (a signal to another rank): saving step " +
                      std::to_string(stopped_at)),
            std::string::npos)
      << text;
  const std::string tag = stop_tag(stopped_at);
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_TRUE(fs::exists(out + "/" + tag + "/recipe_state/optimizer-rank-0000" + std::to_string(rank) +
                           "-of-00002.safetensors"))
        << text;

  auto resumed = fttest::run_fthost(args + " resume_from_checkpoint=true");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const auto all = read_jsonl(metrics_of(out));
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kTotalSteps));
  expect_same_trajectory(by_step(read_jsonl(metrics_of(full))), all, resumed.output);
  EXPECT_TRUE(fttest::read_file(out + "/epoch_1/model.safetensors") ==
              fttest::read_file(full + "/epoch_1/model.safetensors"));
}

// A loopback port free when asked (rank 0 binds it moments later).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Rank 0 started alone waits in the rendezvous for rank 1, and is signalled there: once rank 1
// arrives (never signalled), both end before their first step with status 75 and no checkpoint.
TEST(PreemptionBeforeTraining, SignalDuringSetUpSavesNothing) {
  const std::string out = fttest::temp_dir();
  const std::string config = config_in(out);
  const std::string env =
      "MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(free_port()) + " WORLD_SIZE=2 LOCAL_WORLD_SIZE=2";
  const std::string args = "--config " + config + kShape + " distributed_timeout_s=60";
  RunningFthost rank0(args, out + "/rank0.log", {0, "RANK=0 LOCAL_RANK=0 " + env});
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (rank0.running() && Clock::now() < deadline &&
         fttest::read_file(out + "/rank0.log").find("effective config") == std::string::npos)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  rank0.signal(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(rank0.running()) << fttest::read_file(out + "/rank0.log");
  RunningFthost rank1(args, out + "/rank1.log", {0, "RANK=1 LOCAL_RANK=1 " + env});
  EXPECT_EQ(rank0.wait(), kStoppedExit) << fttest::read_file(out + "/rank0.log");
  EXPECT_EQ(rank1.wait(), kStoppedExit) << fttest::read_file(out + "/rank1.log");
  const std::string text = fttest::read_file(out + "/rank0.log");
  EXPECT_NE(
      text.find("stop requested (SIGTERM) before the first step of this run: nothing new to save; exit status 75"),
      std::string::npos)
      << text;
  EXPECT_EQ(checkpoints_in(out), std::set<std::string>{});
  EXPECT_FALSE(fs::exists(metrics_of(out)) && lines_in(metrics_of(out)) > 0);
}

// The stop save cannot be written (each file limited to 64 KiB, as a full disk would refuse
// it): the run fails naming the file, the checkpoint it resumed from stays the newest one byte
// for byte with nothing partial beside it, and a later resume completes the reference run.
TEST_F(Preemption, FailedStopSaveKeepsTheNewestCheckpoint) {
  const std::string out = fttest::temp_dir();
  const std::string log = out + "/run.log";
  const std::string args = "--config " + config_in(out) + kShape + " resume_from_checkpoint=true";
  {
    RunningFthost first(args, log);
    wait_for_lines(first, metrics_of(out), 3);
    first.signal(SIGTERM);
    ASSERT_EQ(first.wait(), kStoppedExit) << fttest::read_file(log);
  }
  const auto saved = checkpoints_in(out);
  ASSERT_EQ(saved.size(), 1u) << fttest::read_file(log);
  const std::string newest = *saved.begin();
  const auto newest_files = files_under(out + "/" + newest);
  {
    RunningFthost second(args, log, {64 * 1024, ""});
    wait_for_lines(second, metrics_of(out), lines_in(metrics_of(out)) + 1);
    second.signal(SIGTERM);
    const int code = second.wait();
    EXPECT_NE(code, 0);
    EXPECT_NE(code, kStoppedExit);
  }
  const std::string text = fttest::read_file(log);
  EXPECT_NE(text.find("File too large"), std::string::npos) << text;
  EXPECT_NE(text.find(out + "/."), std::string::npos) << "the error names the file it could not write\n" << text;
  EXPECT_EQ(checkpoints_in(out), saved) << text;
  EXPECT_TRUE(files_under(out + "/" + newest) == newest_files) << newest << " changed";

  auto resumed = fttest::run_fthost(args);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from " + out + "/" + newest), std::string::npos) << resumed.output;
  EXPECT_EQ(hidden_entries_of(out), std::set<std::string>{});
  expect_same_trajectory(*reference_, read_jsonl(metrics_of(out)), resumed.output);
  EXPECT_TRUE(final_weights(out) == final_weights(*reference_dir_)) << "final weights differ";
}

// The handlers, in a forked child each: the exit status and how long the child lived.
struct ChildEnd {
  int status = 0;
  double seconds = 0;
};

template <typename Body>
ChildEnd in_child(Body body) {
  const auto start = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status),
          std::chrono::duration<double>(Clock::now() - start).count()};
}

fthost::PreemptionSettings settings_for(std::vector<int> signals, std::optional<int> grace_s = std::nullopt) {
  fthost::PreemptionSettings s;
  s.signals = std::move(signals);
  if (grace_s) s.grace = std::chrono::seconds(*grace_s);
  return s;
}

// The first signal is a request; one within a second of it (a Ctrl-C seen directly and through
// the launcher) is the same request; a later one ends the process with 128 + signal.
TEST(PreemptionSignals, ASecondSignalEndsTheProcess) {
  const ChildEnd end = in_child([] {
    fthost::PreemptionSignals handlers(settings_for({SIGTERM, SIGINT}));
    if (fthost::PreemptionSignals::requested() != 0) ::_exit(2);
    ::raise(SIGINT);
    ::raise(SIGTERM);
    if (fthost::PreemptionSignals::requested() != SIGINT) ::_exit(3);
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    ::raise(SIGTERM);
    ::_exit(4);  // still alive: wrong
  });
  EXPECT_EQ(end.status, 128 + SIGTERM);
}

// preemption_grace_s after the first signal, the process ends by itself with 128 + that signal.
TEST(PreemptionSignals, TheGracePeriodRunningOutEndsTheProcess) {
  const ChildEnd end = in_child([] {
    fthost::PreemptionSignals handlers(settings_for({SIGUSR1}, 1));
    ::raise(SIGUSR1);
    std::this_thread::sleep_for(std::chrono::seconds(10));
    ::_exit(4);
  });
  EXPECT_EQ(end.status, 128 + SIGUSR1);
  EXPECT_GT(end.seconds, 0.9);
  EXPECT_LT(end.seconds, 5.0);
}

// Gone again, the handlers leave the signals as they found them; unconfigured signals are never
// touched, and only one set of handlers may be installed at a time.
TEST(PreemptionSignals, RestoreWhatTheyReplaced) {
  const ChildEnd end = in_child([] {
    auto handler_of = [](int sig) {
      struct sigaction now {};
      sigaction(sig, nullptr, &now);
      return now.sa_handler;
    };
    ::signal(SIGTERM, SIG_IGN);
    {
      fthost::PreemptionSignals handlers(settings_for({SIGTERM}, 5));
      if (handler_of(SIGTERM) == SIG_IGN || handler_of(SIGALRM) == SIG_DFL) ::_exit(2);
      if (handler_of(SIGUSR1) != SIG_DFL) ::_exit(3);
      try {
        fthost::PreemptionSignals twice(settings_for({SIGINT}));
        ::_exit(4);
      } catch (const std::exception&) {
      }
      ::raise(SIGTERM);  // starts the 5 s grace timer, which the destructor cancels
    }
    if (handler_of(SIGTERM) != SIG_IGN || handler_of(SIGALRM) != SIG_DFL) ::_exit(5);
    std::this_thread::sleep_for(std::chrono::milliseconds(5500));
  });
  EXPECT_EQ(end.status, 0);
}

// Bad keys fail validation by name.
TEST(PreemptionSettings, BadValuesNameTheKey) {
  struct Case {
    std::string toml;
    std::string expected;
  };
  for (const Case& c : {Case{"preemption_signals = [\"SIGKILL\"]",
                             "preemption_signals: \"SIGKILL\" is not a signal a run can stop on; expected some of "
                             "SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGHUP, SIGQUIT"},
                        Case{"preemption_signals = [\"SIGTERM\", \"SIGTERM\"]", "SIGTERM is listed twice"},
                        Case{"preemption_grace_s = 0", "preemption_grace_s: expected a whole number of seconds >= 1"},
                        Case{"preemption_signals = []\npreemption_grace_s = 30",
                             "preemption_grace_s: has no effect with preemption_signals = []"}}) {
    SCOPED_TRACE(c.toml);
    const std::string out = fttest::temp_dir();
    const std::string config = fttest::read_file(config_in(out));
    const auto r = fttest::run_fthost("validate --config " + fttest::write_temp("run.toml", c.toml + "\n" + config));
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << r.output;
  }
}

}  // namespace
