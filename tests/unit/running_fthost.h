// A running fthost, started without a shell in between so a signal reaches the trainer (or the
// launcher) itself; the kill-and-resume and preemption tests drive it.
#pragma once

#include "test_helpers.h"

#include <csignal>
#include <string>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fttest {

struct RunOptions {
  // Each file it writes is limited to this many bytes (0: no limit); a write past it fails with
  // EFBIG, as one on a full disk fails with ENOSPC.
  rlim_t file_size_limit = 0;
  std::string environment;  // "NAME=value ..." set for it
};

class RunningFthost {
 public:
  // `args` after the binary; stdout and stderr appended to `log`.
  RunningFthost(const std::string& args, const std::string& log, const RunOptions& options = RunOptions()) {
    pid_ = ::fork();
    if (pid_ == 0) {
      if (options.file_size_limit > 0) {
        const rlimit limit{options.file_size_limit, options.file_size_limit};
        ::setrlimit(RLIMIT_FSIZE, &limit);
        ::signal(SIGXFSZ, SIG_IGN);  // the write fails instead of the process being killed
      }
      const std::string cmd = "exec " + (options.environment.empty() ? "" : "env " + options.environment + " ") +
                              std::string(FTHOST_BINARY) + " " + args + " >> " + log + " 2>&1";
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~RunningFthost() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  RunningFthost(const RunningFthost&) = delete;
  RunningFthost& operator=(const RunningFthost&) = delete;

  pid_t pid() const { return pid_; }
  bool running() {
    if (exited_) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      status_ = status;
    }
    return !exited_;
  }
  void signal(int sig) {
    if (running()) ::kill(pid_, sig);
  }
  void kill9() {
    signal(SIGKILL);
    wait();
  }
  // The exit code, or -signal.
  int wait() {
    if (!exited_) {
      ::waitpid(pid_, &status_, 0);
      exited_ = true;
    }
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : -WTERMSIG(status_);
  }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
};

}  // namespace fttest
