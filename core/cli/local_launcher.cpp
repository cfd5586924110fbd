#include "cli/local_launcher.h"

#include "config/preemption_settings.h"

#include <ft/errors.h>
#include <ft/log.h>
#include <ft/text.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

namespace fthost {

namespace {

// Passed on to every rank: the signals a run may stop on (preemption_signals), whatever each
// rank's config makes of them. A cluster often signals only the launcher (Kubernetes signals a
// container's first process).
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
volatile sig_atomic_t signals_received = 0;
volatile sig_atomic_t last_signal = 0;

void remember_signal(int sig) {
  last_signal = sig;
  signals_received = signals_received + 1;
}

// Binds a loopback TCP socket to `port` (0: one the kernel picks) and closes it again: the port
// it got, or -1 when the bind failed.
int probe_loopback_port(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw ft::Error("launcher: socket(): " + ft::errno_text(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  socklen_t len = sizeof(addr);
  const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                     getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  return bound ? ntohs(addr.sin_port) : -1;
}

// The first port of the kernel's ephemeral range (32768 when it cannot be read).
int first_ephemeral_port() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0, high = 0;
  if (range >> low >> high && low > 1024 && low <= 65535) return low;
  return 32768;
}

// The rendezvous port is free when checked and bound by rank 0 about a second later, after its
// exec and LibTorch's load. A port from the ephemeral range could be handed in between to any
// socket on the machine (every Gloo connection takes one), so the port is drawn below that
// range, where the kernel never assigns one on its own; only a program naming the same port
// could take it.
int free_rendezvous_port() {
  const int high = first_ephemeral_port();
  const int low = std::max(1025, std::min(20000, high - 4096));
  // A machine whose ephemeral range starts near 1024 leaves no room below it: take one the
  // kernel hands out, as before.
  if (high - low < 1024) {
    const int port = probe_loopback_port(0);
    if (port < 0) throw ft::Error("launcher: cannot find a free port: " + ft::errno_text(errno));
    return port;
  }
  std::mt19937 draw(std::random_device{}());
  std::uniform_int_distribution<int> port_in(low, high - 1);
  for (int attempt = 0; attempt < 64; ++attempt) {
    const int port = port_in(draw);
    if (probe_loopback_port(port) == port) return port;
  }
  throw ft::Error("launcher: no free loopback port in " + std::to_string(low) + "-" + std::to_string(high - 1) +
                  " after 64 tries; start the ranks with MASTER_PORT set instead");
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "stopped";
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// torchrun's variables for local rank `local` of `plan` on attempt `attempt`.
pid_t spawn_rank(const LaunchPlan& plan, int local, const std::string& addr, int port, int attempt,
                 const std::vector<std::string>& args) {
  const pid_t pid = fork();
  if (pid < 0) throw ft::Error("launcher: fork(): " + ft::errno_text(errno));
  if (pid > 0) return pid;
  // Child: its own process group would hide terminal signals; stay in ours so Ctrl-C reaches it.
  const int rank = plan.node_rank * plan.nproc_per_node + local;
  const int world = plan.nnodes * plan.nproc_per_node;
  setenv("RANK", std::to_string(rank).c_str(), 1);
  setenv("LOCAL_RANK", std::to_string(local).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
  setenv("LOCAL_WORLD_SIZE", std::to_string(plan.nproc_per_node).c_str(), 1);
  setenv("GROUP_RANK", std::to_string(plan.node_rank).c_str(), 1);
  setenv("GROUP_WORLD_SIZE", std::to_string(plan.nnodes).c_str(), 1);
  setenv("ROLE_RANK", std::to_string(rank).c_str(), 1);
  setenv("ROLE_WORLD_SIZE", std::to_string(world).c_str(), 1);
  setenv("ROLE_NAME", "default", 1);
  setenv("TORCHELASTIC_RESTART_COUNT", std::to_string(attempt).c_str(), 1);
  setenv("TORCHELASTIC_MAX_RESTARTS", std::to_string(plan.max_restarts).c_str(), 1);
  setenv("MASTER_ADDR", addr.c_str(), 1);
  setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  setenv("FTHOST_LAUNCHER", "1", 1);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  std::fprintf(stderr, "fthost launcher: exec of rank %d failed: %s\n", rank, std::strerror(errno));
  _exit(127);
}

// One attempt: starts this node's ranks and waits for them all; the exit code.
int run_attempt(const LaunchPlan& plan, int attempt, const std::vector<std::string>& rank_args) {
  const std::string addr = plan.master_addr.empty() ? "127.0.0.1" : plan.master_addr;
  // Attempt N meets at --master-port + N: a restarted node must not join the previous attempt's
  // store, which lives on in node 0's rank 0 until that rank notices the failure.
  const int port = plan.master_port > 0 ? plan.master_port + attempt : free_rendezvous_port();
  const int nproc = plan.nproc_per_node;
  const int first = plan.node_rank * nproc;
  std::vector<pid_t> pids;
  for (int r = 0; r < nproc; ++r) pids.push_back(spawn_rank(plan, r, addr, port, attempt, rank_args));
  if (plan.nnodes > 1)
    ft::log::info("launcher: node {} of {}: started ranks {}-{} of {} (rendezvous {}:{})", plan.node_rank, plan.nnodes,
                  first, first + nproc - 1, plan.nnodes * nproc, addr, port);
  else
    ft::log::info("launcher: started {} ranks (rendezvous {}:{})", nproc, addr, port);

  int running = nproc;
  int result = 0;
  // A failed rank: the others are stopped and, 10 s later, killed. A forwarded signal: the ranks
  // save and exit in their own time (preemption_grace_s); a third signal kills them.
  bool stopping_after_failure = false;
  int forwarded = 0;
  auto kill_at = std::chrono::steady_clock::time_point::max();
  auto stop_others = [&](int sig) {
    for (pid_t p : pids)
      if (p > 0) kill(p, sig);
  };
  // A failure outranks a stop on request, which outranks success.
  auto note_exit = [&](int code) {
    if (code != 0 && (result == 0 || result == kPreemptedExitCode)) result = code;
  };
  while (running > 0) {
    if (signals_received > forwarded) {
      forwarded = signals_received;
      const int sig = last_signal;
      if (forwarded <= 2) {
        ft::log::warn("launcher: received {}; forwarding it to every rank{}", signal_name(sig),
                      forwarded == 1 ? " (a run with preemption_signals saves the step it is on, then exits)"
                                     : " (a second signal: ranks end without saving)");
        stop_others(sig);
      } else {
        ft::log::error("launcher: received {} a third time; killing every rank", signal_name(sig));
        stop_others(SIGKILL);
      }
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (int r = 0; r < nproc; ++r) {
        if (pids[r] != pid) continue;
        --running;
        pids[r] = -1;
        const int code = exit_code_of(status);
        note_exit(code);
        if (code == 0 || code == kPreemptedExitCode || stopping_after_failure) continue;
        ft::log::error("launcher: rank {} (pid {}) {}; stopping the other ranks", first + r, pid,
                       describe_status(status));
        stop_others(SIGTERM);
        stopping_after_failure = true;
        kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      }
      continue;
    }
    if (std::chrono::steady_clock::now() > kill_at) {
      ft::log::error("launcher: ranks still running 10 s after SIGTERM; killing them");
      stop_others(SIGKILL);
      kill_at = std::chrono::steady_clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (result == kPreemptedExitCode)
    ft::log::warn("launcher: the ranks stopped on request after saving; exit status {}", kPreemptedExitCode);
  return result;
}

}  // namespace

void check_launch_plan(const LaunchPlan& plan) {
  if (plan.nproc_per_node < 1)
    throw ft::Error("--nproc-per-node: expected at least 1, got " + std::to_string(plan.nproc_per_node));
  if (plan.nnodes < 1) throw ft::Error("--nnodes: expected at least 1, got " + std::to_string(plan.nnodes));
  if (plan.node_rank < 0 || plan.node_rank >= plan.nnodes)
    throw ft::Error("--node-rank " + std::to_string(plan.node_rank) + ": expected 0 to " +
                    std::to_string(plan.nnodes - 1) + " (below --nnodes " + std::to_string(plan.nnodes) + ")");
  if (plan.nnodes > 1 && (plan.master_addr.empty() || plan.master_port <= 0))
    throw ft::Error("--nnodes " + std::to_string(plan.nnodes) +
                    ": every node needs --master-addr and --master-port, the address of node 0 (node rank 0, which "
                    "runs rank 0) that every node reaches, and a free port there");
  if (plan.master_port < 0 || plan.master_port > 65535)
    throw ft::Error("--master-port " + std::to_string(plan.master_port) + ": expected a port, 1 to 65535");
  if (plan.max_restarts < 0)
    throw ft::Error("--max-restarts: expected 0 or more, got " + std::to_string(plan.max_restarts));
  if (plan.master_port > 0 && plan.master_port + plan.max_restarts > 65535)
    throw ft::Error("--master-port " + std::to_string(plan.master_port) + " with --max-restarts " +
                    std::to_string(plan.max_restarts) + ": restart N meets at port + N, past 65535");
}

int launch_ranks(const LaunchPlan& plan, const std::vector<std::string>& rank_args) {
  check_launch_plan(plan);
  struct sigaction action {};
  action.sa_handler = remember_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int sig : kForwardedSignals) sigaction(sig, &action, nullptr);

  std::vector<std::string> args = rank_args;
  for (int attempt = 0;; ++attempt) {
    const int result = run_attempt(plan, attempt, args);
    // A stop on request is not a failure to recover from: the job is ending.
    if (result == 0 || result == kPreemptedExitCode || signals_received || attempt >= plan.max_restarts) return result;
    ft::log::warn(
        "launcher: restarting this node's ranks (restart {} of {}); they resume from the newest complete "
        "checkpoint",
        attempt + 1, plan.max_restarts);
    // A restart continues the run: every rank reads the same newest complete checkpoint (on every
    // node the same when output_dir is shared).
    if (attempt == 0) args.push_back("resume_from_checkpoint=true");
  }
}

int launch_local_ranks(int nproc, const std::vector<std::string>& rank_args) {
  LaunchPlan plan;
  plan.nproc_per_node = nproc;
  return launch_ranks(plan, rank_args);
}

}  // namespace fthost
