// Simulated hosts for multi-node tests: Linux network namespaces, each with its own loopback and
// one veth interface (eth0, 10.213.0.<host + 1>/24) whose other end is a port of a bridge in a
// further "switch" namespace, so every host reaches every other over a real link that a test can
// cut. Processes started on a host live in its namespace; the file system and everything else is
// shared. The namespaces are named fthost-mn-<pid>-<n>-<role>, and the destructor kills every
// process in them and deletes them, also when a test fails; a test process that died without its
// destructor leaves namespaces the next NetnsHosts of any process deletes (their pid is gone).
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fttest {

class NetnsHosts {
 public:
  // Why hosts cannot be made here (no privilege to create namespaces, no `ip`), or nothing.
  static std::optional<std::string> unavailable_reason();

  // Creates `count` hosts; throws std::runtime_error with the failing command's output.
  explicit NetnsHosts(int count);
  ~NetnsHosts();
  NetnsHosts(const NetnsHosts&) = delete;
  NetnsHosts& operator=(const NetnsHosts&) = delete;

  int count() const { return static_cast<int>(hosts_.size()); }
  const std::string& namespace_of(int host) const { return hosts_.at(host); }
  static std::string address_of(int host) { return "10.213.0." + std::to_string(host + 1); }
  static const char* interface_name() { return "eth0"; }

  // Starts `argv` (argv[0] a path) on `host` with `env` added to this process's environment,
  // stdout and stderr to `log`. The caller waits for it (waitpid).
  pid_t spawn(int host, const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
              const std::string& log) const;

  // The processes running on `host` (every process in its namespace).
  std::vector<pid_t> processes_on(int host) const;
  // SIGKILLs every process on `host`: the machine lost its power.
  void kill_host(int host) const;
  // Takes the host's link down (its switch port), or brings it back.
  void set_link(int host, bool up) const;
  // Whether `host` reaches `other` over TCP (a connection refused counts as reached).
  bool reaches(int host, int other) const;

 private:
  std::string switch_;
  std::vector<std::string> hosts_;
};

}  // namespace fttest
