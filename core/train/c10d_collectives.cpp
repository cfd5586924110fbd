#include "train/c10d_collectives.h"

#include <ft/errors.h>
#include <ft/log.h>
#include <ft/one_rank_group.h>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if FTHOST_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <utility>

namespace fthost {

namespace {

// A collective's tensor as its error message names it, formatted only when there is an error.
struct CollectiveTensor {
  CollectiveTensor() = default;
  CollectiveTensor(const at::Tensor& t)  // implicit: every collective passes its tensor
      : numel(t.numel()), dtype(t.scalar_type()), device(t.device()), defined(true) {}
  std::string text() const {
    if (!defined) return "";
    return " of " + std::to_string(numel) + " " + std::string(c10::toString(dtype)) + " elements on " + device.str();
  }
  std::int64_t numel = 0;
  at::ScalarType dtype = at::kFloat;
  c10::Device device = c10::Device(c10::DeviceType::CPU);
  bool defined = false;
};

// Which host address each world rank's Gloo device bound, exchanged at the rendezvous, so that a
// failed collective can name the ranks behind a lost connection.
using RankHosts = std::vector<std::string>;

// Whether anything at `address` answers a TCP connection attempt within `wait` (a refusal is an
// answer: the host is there, its rank is not). A cut link or a powered-off host does not answer.
bool host_answers(const std::string& address, std::chrono::milliseconds wait) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(address.c_str(), "9", &hints, &found) != 0 || !found) return false;
  const int fd = socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
  bool answered = false;
  if (fd >= 0) {
    if (connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
      answered = true;
    } else if (errno == ECONNREFUSED) {
      answered = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, static_cast<int>(wait.count())) == 1) {
        int error = 0;
        socklen_t len = sizeof(error);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
        answered = error == 0 || error == ECONNREFUSED;
      }
    }
    close(fd);
  }
  freeaddrinfo(found);
  return answered;
}

// World ranks grouped by the host address each one bound.
std::map<std::string, std::vector<int>> ranks_by_host(const RankHosts& hosts) {
  std::map<std::string, std::vector<int>> ranks_on;
  for (std::size_t r = 0; r < hosts.size(); ++r) ranks_on[hosts[r]].push_back(static_cast<int>(r));
  return ranks_on;
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

// The lost peers, as far as this rank can tell: the host a broken connection's message names
// (Gloo writes "[10.0.0.2]:port"), else every other host that no longer answers at all. Empty when
// the run is on one host or nothing can be told.
std::string lost_peers(const std::string& message, const RankHosts& hosts, int self) {
  if (hosts.empty() || self < 0 || static_cast<std::size_t>(self) >= hosts.size()) return "";
  auto ranks_on = ranks_by_host(hosts);
  if (ranks_on.size() < 2) return "";
  // Matched by hand, not with std::regex: the PyTorch wheel exports std::regex instantiations
  // built by another compiler (checkpoint_directories.cpp).
  std::set<std::string> named;
  for (std::size_t open = message.find('['); open != std::string::npos; open = message.find('[', open + 1)) {
    const std::size_t close = message.find("]:", open);
    if (close == std::string::npos) break;
    const std::string address = message.substr(open + 1, close - open - 1);
    if (ranks_on.count(address) && address != hosts[self]) named.insert(address);
  }
  std::string text;
  for (const auto& host : named) text += (text.empty() ? "" : "; ") + ranks_text(ranks_on[host]) + " on host " + host;
  if (!text.empty()) return "lost connection to " + text;
  for (const auto& [host, ranks] : ranks_on) {
    if (host == hosts[self] || host_answers(host, std::chrono::milliseconds(2000))) continue;
    text += (text.empty() ? "" : "; ") + ranks_text(ranks) + " on host " + host;
  }
  return text.empty() ? "" : "host unreachable from this rank: " + text;
}

// One process group as ft::Collectives, over the c10d backends the seed's
// init_process_group("cuda:nccl,cpu:gloo") gives: each collective goes to the backend of its
// tensor's device (NCCL for CUDA tensors where the run is on CUDA, Gloo for CPU tensors).
class C10dCollectives final : public ft::Collectives {
 public:
  C10dCollectives(c10::intrusive_ptr<c10d::Backend> cpu, c10::intrusive_ptr<c10d::Backend> accelerator, int world_rank,
                  std::chrono::milliseconds timeout, std::shared_ptr<const RankHosts> hosts)
      : cpu_(std::move(cpu)),
        accelerator_(std::move(accelerator)),
        world_rank_(world_rank),
        timeout_(timeout),
        hosts_(std::move(hosts)) {}

  int rank() const override { return cpu_->getRank(); }
  int size() const override { return cpu_->getSize(); }

  void all_reduce_sum(at::Tensor& tensor) override { all_reduce_sum_async(tensor)->wait(); }

  std::unique_ptr<ft::PendingCollective> all_reduce_sum_async(at::Tensor& tensor) override {
    c10d::Backend& backend = backend_for(tensor);
    c10::intrusive_ptr<c10d::Work> work;
    guarded("all_reduce", backend, tensor, [&] {
      std::vector<at::Tensor> tensors{tensor};
      c10d::AllreduceOptions opts;
      opts.reduceOp = c10d::ReduceOp::SUM;
      work = backend.allreduce(tensors, opts);
    });
    return std::make_unique<Pending>(std::move(work), this, "all_reduce", backend, tensor);
  }

  void all_gather(at::Tensor& full, const at::Tensor& shard) override { all_gather_async(full, shard)->wait(); }

  std::unique_ptr<ft::PendingCollective> all_gather_async(at::Tensor& full, const at::Tensor& shard) override {
    c10d::Backend& backend = backend_for(full);
    at::Tensor input = shard.contiguous().view({-1});
    c10::intrusive_ptr<c10d::Work> work;
    guarded("all_gather", backend, shard, [&] {
      at::Tensor output = full.view({-1});
      if (is_gloo(backend)) {
        // Gloo gathers into one tensor per rank; chunks of `full` along dim 0 are contiguous views.
        std::vector<std::vector<at::Tensor>> outputs{output.chunk(size())};
        std::vector<at::Tensor> inputs{input};
        work = backend.allgather(outputs, inputs);
      } else {
        work = backend._allgather_base(output, input);
      }
    });
    return std::make_unique<Pending>(std::move(work), this, "all_gather", backend, shard, std::move(input));
  }

  void reduce_scatter_sum(at::Tensor& shard, const at::Tensor& full) override {
    reduce_scatter_sum_async(shard, full)->wait();
  }

  std::unique_ptr<ft::PendingCollective> reduce_scatter_sum_async(at::Tensor& shard, const at::Tensor& full) override {
    c10d::Backend& backend = backend_for(full);
    at::Tensor input = full.contiguous().view({-1});
    if (!is_gloo(backend)) {
      c10::intrusive_ptr<c10d::Work> work;
      at::Tensor output = shard.view({-1});
      guarded("reduce_scatter", backend, full, [&] {
        c10d::ReduceScatterOptions opts;
        opts.reduceOp = c10d::ReduceOp::SUM;
        work = backend._reduce_scatter_base(output, input, opts);
      });
      return std::make_unique<Pending>(std::move(work), this, "reduce_scatter", backend, full, std::move(input));
    }
    // Gloo's reduce-scatter is an all-reduce underneath. An all-to-all sends each rank only the
    // slices it keeps ((n-1)/n of the buffer, half of what an all-reduce moves), and the slices
    // are summed here in rank order, so every rank's result is the same bitwise whatever the
    // transport did.
    at::Tensor received = at::empty_like(input);
    c10::intrusive_ptr<c10d::Work> work;
    guarded("reduce_scatter", backend, full, [&] {
      std::vector<int64_t> equal_splits;
      work = backend.alltoall_base(received, input, equal_splits, equal_splits);
    });
    const int ranks = size();
    auto sum_slices = [shard, received, ranks]() mutable {
      at::Tensor slices = received.view({ranks, -1});
      at::Tensor out = shard.view({-1});
      out.copy_(slices[0]);
      for (int r = 1; r < ranks; ++r) out.add_(slices[r]);
    };
    return std::make_unique<Pending>(std::move(work), this, "reduce_scatter", backend, full, std::move(input),
                                     std::move(sum_slices));
  }

  void all_to_all(at::Tensor& output, const at::Tensor& input, const std::vector<std::int64_t>& output_splits,
                  const std::vector<std::int64_t>& input_splits) override {
    c10d::Backend& backend = backend_for(input);
    at::Tensor sent = input.contiguous();
    guarded("all_to_all", backend, input, [&] {
      std::vector<std::int64_t> out_splits = output_splits, in_splits = input_splits;
      backend.alltoall_base(output, sent, out_splits, in_splits)->wait();
    });
  }

  void broadcast(at::Tensor& tensor, int root) override {
    c10d::Backend& backend = backend_for(tensor);
    guarded("broadcast", backend, tensor, [&] {
      std::vector<at::Tensor> tensors{tensor};
      c10d::BroadcastOptions opts;
      opts.rootRank = root;
      backend.broadcast(tensors, opts)->wait();
    });
  }

  // Over Gloo: a barrier has no tensor, and Gloo's needs no device.
  void barrier() override {
    guarded("barrier", *cpu_, CollectiveTensor{}, [&] { cpu_->barrier()->wait(); });
  }

  // What the rank was doing, the backend's own message, and only then what a lost connection or
  // a timeout usually means.
  template <class Fn>
  void guarded(const char* op, const c10d::Backend& backend, const CollectiveTensor& tensor, Fn&& fn) const {
    try {
      fn();
    } catch (const ft::Error&) {
      throw;
    } catch (const std::exception& e) {
      const std::string lost = hosts_ ? lost_peers(e.what(), *hosts_, world_rank_) : "";
      throw ft::Error("rank " + std::to_string(world_rank_) + ": " + backend.getBackendName() + " " + op +
                      tensor.text() + " across " + std::to_string(size()) +
                      " ranks failed: " + (lost.empty() ? "" : lost + ": ") + first_line(e.what()) +
                      " (when the cause is a lost connection or a timeout: another rank exited or did not answer "
                      "within " +
                      std::to_string(timeout_.count() / 1000) + " s, distributed_timeout_s)");
    }
  }

 private:
  static std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }
  static bool is_gloo(const c10d::Backend& backend) { return backend.getBackendName() == "gloo"; }

  c10d::Backend& backend_for(const at::Tensor& tensor) const {
    if (tensor.device().is_cpu() || !accelerator_) return *cpu_;
    return *accelerator_;
  }

  // `keep_alive` is the buffer the transport reads until the work is done; `then` finishes the
  // result on this thread after it.
  class Pending final : public ft::PendingCollective {
   public:
    Pending(c10::intrusive_ptr<c10d::Work> work, const C10dCollectives* owner, const char* op,
            const c10d::Backend& backend, const at::Tensor& described, at::Tensor keep_alive = {},
            std::function<void()> then = {})
        : work_(std::move(work)),
          owner_(owner),
          op_(op),
          backend_(backend),
          described_(described),
          keep_alive_(std::move(keep_alive)),
          then_(std::move(then)) {}
    void wait() override {
      owner_->guarded(op_, backend_, described_, [&] { work_->wait(); });
      keep_alive_.reset();
      if (then_) std::exchange(then_, nullptr)();
    }

   private:
    c10::intrusive_ptr<c10d::Work> work_;
    const C10dCollectives* owner_;
    const char* op_;
    const c10d::Backend& backend_;
    CollectiveTensor described_;
    at::Tensor keep_alive_;
    std::function<void()> then_;
  };

  c10::intrusive_ptr<c10d::Backend> cpu_;
  c10::intrusive_ptr<c10d::Backend> accelerator_;  // null unless the run is on CUDA
  int world_rank_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<const RankHosts> hosts_;
};

// Where this rank's collectives listen: an interface's address and name.
struct LocalEndpoint {
  std::string address;    // empty: GLOO_SOCKET_IFNAME names the interface
  std::string interface;  // empty when unknown
};

// An IPv4 or IPv6 address as text; empty for another family.
std::string address_text(const sockaddr& address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(address).sin_addr, text, sizeof text);
  else if (address.sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(address).sin6_addr, text, sizeof text);
  return text;
}

// The interface owning `address`, from the machine's interface list.
std::string interface_of(const std::string& address) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string name;
  for (ifaddrs* i = list; i && name.empty(); i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    if (address == address_text(*i->ifa_addr)) name = i->ifa_name;
  }
  freeifaddrs(list);
  return name;
}

// The local address the kernel routes to the master from: a connected UDP socket sends nothing,
// but its source address is the one the route to the master picks. The host name is no guide on
// many machines (Debian maps it to 127.0.1.1, a container to an address another network
// namespace does not have), so this is what Gloo binds when GLOO_SOCKET_IFNAME is unset.
LocalEndpoint endpoint_towards(const DistributedEnvironment& env) {
  if (const char* iface = std::getenv("GLOO_SOCKET_IFNAME"); iface && *iface) return {"", iface};
  if (env.master_addr == "127.0.0.1" || env.master_addr == "localhost") return {"127.0.0.1", "lo"};
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(env.master_port);
  if (const int rc = getaddrinfo(env.master_addr.c_str(), port.c_str(), &hints, &found); rc != 0 || !found)
    throw ft::Error("rank " + std::to_string(env.rank) + ": MASTER_ADDR " + env.master_addr +
                    " does not resolve: " + gai_strerror(rc));
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  const int fd = socket(found->ai_family, SOCK_DGRAM, 0);
  const bool routed = fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
                      getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
  const int error = errno;
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  if (!routed)
    throw ft::Error("rank " + std::to_string(env.rank) + ": no route to MASTER_ADDR " + env.master_addr + ": " +
                    std::strerror(error) + " (set GLOO_SOCKET_IFNAME to the interface that reaches it)");
  const std::string text = address_text(reinterpret_cast<const sockaddr&>(local));
  return {text, interface_of(text)};
}

std::shared_ptr<::gloo::transport::Device> gloo_device(const LocalEndpoint& endpoint) {
  if (endpoint.address.empty()) return c10d::ProcessGroupGloo::createDeviceForInterface(endpoint.interface);
  return c10d::ProcessGroupGloo::createDeviceForHostname(endpoint.address);
}

c10::intrusive_ptr<c10d::Backend> gloo_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                             const LocalEndpoint& endpoint, std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(gloo_device(endpoint));
  options->threads = 2;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
}

c10::intrusive_ptr<c10d::Backend> accelerator_group(CollectiveBackend backend,
                                                    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                    std::chrono::milliseconds timeout) {
  switch (backend) {
    case CollectiveBackend::none: return {};
    case CollectiveBackend::nccl:
#if FTHOST_WITH_NCCL
    {
      // The timeout reaches NCCL's watchdog, which aborts the communicator and ends this rank
      // with the collective it was waiting on when a peer dies or hangs.
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout;
      return c10::make_intrusive<c10d::ProcessGroupNCCL>(c10::make_intrusive<c10d::PrefixStore>("nccl", store), rank,
                                                         size, options);
    }
#else
      (void)store, (void)rank, (void)size, (void)timeout;
      throw ft::Error(
          "device = \"cuda\" with several ranks needs NCCL, and this build has none (FTHOST_WITH_CUDA=OFF)");
#endif
    case CollectiveBackend::gloo: break;
  }
  throw ft::Error("the CUDA collectives' backend must be NCCL");
}

}  // namespace

ProcessGroups single_process_groups() {
  ProcessGroups groups;
  groups.world = ft::one_rank_group();
  groups.new_group = [](const std::vector<int>& ranks) -> std::shared_ptr<ft::Collectives> {
    if (ranks.size() != 1 || ranks[0] != 0) return nullptr;
    return ft::one_rank_group();
  };
  return groups;
}

ProcessGroups connect_process_groups(const DistributedEnvironment& env, std::chrono::milliseconds timeout,
                                     c10::DeviceType device) {
  const CollectiveBackends backends = collective_backends(device);
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(env.master_port);
  store_options.isServer = env.rank == 0;
  store_options.numWorkers = env.world_size;
  store_options.waitWorkers = true;
  // A restarted attempt (a launcher's --max-restarts, or torchrun's) meets ranks of other nodes
  // that may still be finding out that the previous attempt failed: one blocked where no
  // connection breaks (rank 0 waiting for a lost rank's checkpoint shard) takes up to the
  // timeout. Its rendezvous outlasts that, so the nodes meet again.
  const std::chrono::milliseconds rendezvous_timeout =
      env.restart_count > 0 ? 2 * timeout + std::chrono::seconds(10) : timeout;
  store_options.timeout = rendezvous_timeout;
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options);
  } catch (const std::exception& e) {
    throw ft::Error("rank " + std::to_string(env.rank) + ": rendezvous at " + env.master_addr + ":" +
                    std::to_string(env.master_port) + " failed within " +
                    std::to_string(rendezvous_timeout.count() / 1000) + " s (are all " +
                    std::to_string(env.world_size) + " ranks started? is the port free?): " + e.what());
  }
  const LocalEndpoint endpoint = endpoint_towards(env);
  // NCCL picks its own interfaces (not loopback, not docker's) when NCCL_SOCKET_IFNAME is unset;
  // the one that reaches the master is the one known to work.
  if (backends.accelerator == CollectiveBackend::nccl && !std::getenv("NCCL_SOCKET_IFNAME") &&
      !endpoint.interface.empty() && env.master_addr != "127.0.0.1" && env.master_addr != "localhost")
    setenv("NCCL_SOCKET_IFNAME", ("=" + endpoint.interface).c_str(), 1);
  // Every rank's address, for naming the ranks behind a lost connection.
  auto hosts = std::make_shared<RankHosts>(env.world_size);
  const std::string own_address = endpoint.address.empty() ? endpoint.interface : endpoint.address;
  store->set("fthost_host/" + std::to_string(env.rank),
             std::vector<std::uint8_t>(own_address.begin(), own_address.end()));
  for (int r = 0; r < env.world_size; ++r) {
    const auto value = store->get("fthost_host/" + std::to_string(r));
    (*hosts)[r] = std::string(value.begin(), value.end());
  }
  ProcessGroups groups;
  auto world_store = c10::make_intrusive<c10d::PrefixStore>("world", store);
  groups.world = std::make_shared<C10dCollectives>(
      gloo_group(world_store, env.rank, env.world_size, endpoint, timeout),
      accelerator_group(backends.accelerator, world_store, env.rank, env.world_size, timeout), env.rank, timeout,
      hosts);
  auto counter = std::make_shared<int>(0);
  groups.new_group = [store, env, timeout, counter, backends, endpoint,
                      hosts](const std::vector<int>& ranks) -> std::shared_ptr<ft::Collectives> {
    const int id = (*counter)++;
    int my_index = -1;
    for (std::size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i] == env.rank) my_index = static_cast<int>(i);
    if (my_index < 0) return nullptr;
    std::string key = "group" + std::to_string(id);
    for (int r : ranks) key += "_" + std::to_string(r);
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>(key, store);
    const int group_size = static_cast<int>(ranks.size());
    return std::make_shared<C10dCollectives>(
        gloo_group(prefixed, my_index, group_size, endpoint, timeout),
        accelerator_group(backends.accelerator, prefixed, my_index, group_size, timeout), env.rank, timeout, hosts);
  };
  ft::log::info("rank {}/{}: connected to {}:{} ({}; this rank on {}{})", env.rank, env.world_size, env.master_addr,
                env.master_port, backends.spec, own_address,
                endpoint.interface.empty() || endpoint.address.empty() ? "" : " (" + endpoint.interface + ")");
  if (const auto ranks_on = ranks_by_host(*hosts); ranks_on.size() > 1) {
    std::string layout;
    for (const auto& [host, ranks] : ranks_on) layout += (layout.empty() ? "" : "; ") + host + ": " + ranks_text(ranks);
    ft::log::info("{} hosts: {}", ranks_on.size(), layout);
  }
  return groups;
}

}  // namespace fthost
