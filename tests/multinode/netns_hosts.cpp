#include "netns_hosts.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace fttest {

namespace {

const char* kPrefix = "fthost-mn-";

struct Output {
  int status;
  std::string text;
};

Output shell(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  std::string text;
  std::array<char, 1024> buf{};
  while (std::size_t n = fread(buf.data(), 1, buf.size(), pipe)) text.append(buf.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
}

void must(const std::string& command) {
  const Output out = shell(command);
  if (out.status != 0) throw std::runtime_error("`" + command + "` failed: " + out.text);
}

std::vector<pid_t> pids_in(const std::string& ns) {
  std::vector<pid_t> pids;
  std::istringstream in(shell("ip netns pids " + ns).text);
  for (long pid; in >> pid;) pids.push_back(static_cast<pid_t>(pid));
  return pids;
}

void kill_all_in(const std::string& ns) {
  for (int round = 0; round < 50; ++round) {
    const auto pids = pids_in(ns);
    if (pids.empty()) return;
    for (pid_t p : pids) kill(p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void delete_namespace(const std::string& ns) {
  kill_all_in(ns);
  shell("ip netns delete " + ns);
}

// Namespaces of test processes that died without their destructor.
void delete_orphans() {
  std::istringstream in(shell("ip netns list").text);
  for (std::string line; std::getline(in, line);) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.rfind(kPrefix, 0) != 0) continue;
    const long owner = std::strtol(name.c_str() + std::strlen(kPrefix), nullptr, 10);
    if (owner > 0 && kill(static_cast<pid_t>(owner), 0) != 0 && errno == ESRCH) delete_namespace(name);
  }
}

// Enters `ns` (this process must be single-threaded: a fork's child).
bool enter(const std::string& ns) {
  const int fd = open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = setns(fd, CLONE_NEWNET) == 0;
  close(fd);
  return ok;
}

}  // namespace

std::optional<std::string> NetnsHosts::unavailable_reason() {
  if (shell("command -v ip").status != 0) return std::string("the `ip` command (iproute2) is not installed");
  const std::string probe = std::string(kPrefix) + std::to_string(getpid()) + "-probe";
  const Output out = shell("ip netns add " + probe);
  if (out.status != 0)
    return "cannot create a network namespace (needs root or CAP_SYS_ADMIN): `ip netns add` said: " + out.text;
  const Output bridge = shell("ip -n " + probe + " link add br0 type bridge");
  shell("ip netns delete " + probe);
  if (bridge.status != 0) return "cannot create a bridge inside a network namespace: " + bridge.text;
  return std::nullopt;
}

NetnsHosts::NetnsHosts(int count) {
  delete_orphans();
  static std::atomic<int> instance{0};
  const std::string base = kPrefix + std::to_string(getpid()) + "-" + std::to_string(instance++) + "-";
  switch_ = base + "switch";
  try {
    must("ip netns add " + switch_);
    must("ip -n " + switch_ + " link add br0 type bridge");
    must("ip -n " + switch_ + " link set br0 up");
    for (int h = 0; h < count; ++h) {
      const std::string ns = base + "host" + std::to_string(h);
      must("ip netns add " + ns);
      hosts_.push_back(ns);
      const std::string port = "port" + std::to_string(h);
      must("ip -n " + ns + " link set lo up");
      must("ip -n " + ns + " link add eth0 type veth peer name " + port + " netns " + switch_);
      must("ip -n " + ns + " addr add " + address_of(h) + "/24 dev eth0");
      must("ip -n " + ns + " link set eth0 up");
      must("ip -n " + switch_ + " link set " + port + " master br0");
      must("ip -n " + switch_ + " link set " + port + " up");
    }
  } catch (...) {
    for (const auto& ns : hosts_) delete_namespace(ns);
    delete_namespace(switch_);
    throw;
  }
  // The bridge forwards once its ports are up; wait until every host reaches host 0.
  for (int h = 1; h < count; ++h)
    for (int tries = 0; tries < 50 && !reaches(h, 0); ++tries)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

NetnsHosts::~NetnsHosts() {
  for (const auto& ns : hosts_) delete_namespace(ns);
  delete_namespace(switch_);
}

pid_t NetnsHosts::spawn(int host, const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                        const std::string& log) const {
  const std::string& ns = hosts_.at(host);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  if (!enter(ns)) {
    std::fprintf(stderr, "cannot enter network namespace %s: %s\n", ns.c_str(), std::strerror(errno));
    _exit(126);
  }
  for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  std::fprintf(stderr, "exec %s failed: %s\n", args[0], std::strerror(errno));
  _exit(127);
}

std::vector<pid_t> NetnsHosts::processes_on(int host) const { return pids_in(hosts_.at(host)); }

void NetnsHosts::kill_host(int host) const { kill_all_in(hosts_.at(host)); }

void NetnsHosts::set_link(int host, bool up) const {
  must("ip -n " + switch_ + " link set port" + std::to_string(host) + (up ? " up" : " down"));
}

bool NetnsHosts::reaches(int host, int other) const {
  const pid_t pid = fork();
  if (pid == 0) {
    if (!enter(hosts_.at(host))) _exit(2);
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(9);
    inet_pton(AF_INET, address_of(other).c_str(), &addr.sin_addr);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 || errno == ECONNREFUSED) _exit(0);
    if (errno != EINPROGRESS) _exit(1);
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, 1000) != 1) _exit(1);
    int error = 0;
    socklen_t len = sizeof error;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
    _exit(error == 0 || error == ECONNREFUSED ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace fttest
