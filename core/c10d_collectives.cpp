#include "c10d_collectives.h"

#include <ft/errors.h>
#include <ft/log.h>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstdlib>
#include <functional>
#include <utility>

namespace fthost {

namespace {

class C10dCollectives final : public ft::Collectives {
 public:
  C10dCollectives(c10::intrusive_ptr<c10d::ProcessGroupGloo> group, int world_rank, std::chrono::milliseconds timeout)
      : group_(std::move(group)), world_rank_(world_rank), timeout_(timeout) {}

  int rank() const override { return group_->getRank(); }
  int size() const override { return group_->getSize(); }

  void all_reduce_sum(at::Tensor& tensor) override {
    guarded("all_reduce", [&] {
      std::vector<at::Tensor> tensors{tensor};
      c10d::AllreduceOptions opts;
      opts.reduceOp = c10d::ReduceOp::SUM;
      group_->allreduce(tensors, opts)->wait();
    });
  }

  std::unique_ptr<ft::PendingCollective> all_reduce_sum_async(at::Tensor& tensor) override {
    c10::intrusive_ptr<c10d::Work> work;
    guarded("all_reduce", [&] {
      std::vector<at::Tensor> tensors{tensor};
      c10d::AllreduceOptions opts;
      opts.reduceOp = c10d::ReduceOp::SUM;
      work = group_->allreduce(tensors, opts);
    });
    return std::make_unique<Pending>(std::move(work), this);
  }

  void all_gather(at::Tensor& full, const at::Tensor& shard) override {
    guarded("all_gather", [&] {
      // Gloo gathers into one tensor per rank; chunks of `full` along dim 0 are contiguous views.
      std::vector<std::vector<at::Tensor>> outputs{full.view({-1}).chunk(size())};
      std::vector<at::Tensor> inputs{shard.contiguous().view({-1})};
      group_->allgather(outputs, inputs)->wait();
    });
  }

  void reduce_scatter_sum(at::Tensor& shard, const at::Tensor& full) override {
    reduce_scatter_sum_async(shard, full)->wait();
  }

  // Gloo in this LibTorch has no reduce-scatter. An all-to-all sends each rank only the slices it
  // keeps ((n-1)/n of the buffer, half of what an all-reduce moves), and the slices are summed
  // here in rank order, so every rank's result is the same bitwise whatever the transport did.
  std::unique_ptr<ft::PendingCollective> reduce_scatter_sum_async(at::Tensor& shard, const at::Tensor& full) override {
    at::Tensor input = full.contiguous().view({-1});
    at::Tensor received = at::empty_like(input);
    c10::intrusive_ptr<c10d::Work> work;
    guarded("reduce_scatter", [&] {
      std::vector<int64_t> equal_splits;
      work = group_->alltoall_base(received, input, equal_splits, equal_splits);
    });
    const int ranks = size();
    auto sum_slices = [shard, received, ranks]() mutable {
      at::Tensor slices = received.view({ranks, -1});
      at::Tensor out = shard.view({-1});
      out.copy_(slices[0]);
      for (int r = 1; r < ranks; ++r) out.add_(slices[r]);
    };
    return std::make_unique<Pending>(std::move(work), this, "reduce_scatter", std::move(input), std::move(sum_slices));
  }

  void broadcast(at::Tensor& tensor, int root) override {
    guarded("broadcast", [&] {
      std::vector<at::Tensor> tensors{tensor};
      c10d::BroadcastOptions opts;
      opts.rootRank = root;
      group_->broadcast(tensors, opts)->wait();
    });
  }

  void barrier() override {
    guarded("barrier", [&] { group_->barrier()->wait(); });
  }

  template <class Fn>
  void guarded(const char* op, Fn&& fn) const {
    try {
      fn();
    } catch (const ft::Error&) {
      throw;
    } catch (const std::exception& e) {
      throw ft::Error("rank " + std::to_string(world_rank_) + ": " + op + " across " + std::to_string(size()) +
                      " ranks failed: another rank exited or did not answer within " +
                      std::to_string(timeout_.count() / 1000) + " s (distributed_timeout_s): " + first_line(e.what()));
    }
  }

 private:
  static std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

  // `keep_alive` is the buffer the transport reads until the work is done; `then` finishes the
  // result on this thread after it.
  class Pending final : public ft::PendingCollective {
   public:
    Pending(c10::intrusive_ptr<c10d::Work> work, const C10dCollectives* owner, const char* op = "all_reduce",
            at::Tensor keep_alive = {}, std::function<void()> then = {})
        : work_(std::move(work)), owner_(owner), op_(op), keep_alive_(std::move(keep_alive)), then_(std::move(then)) {}
    void wait() override {
      owner_->guarded(op_, [&] { work_->wait(); });
      keep_alive_.reset();
      if (then_) std::exchange(then_, nullptr)();
    }

   private:
    c10::intrusive_ptr<c10d::Work> work_;
    const C10dCollectives* owner_;
    const char* op_;
    at::Tensor keep_alive_;
    std::function<void()> then_;
  };

  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  int world_rank_;
  std::chrono::milliseconds timeout_;
};

std::shared_ptr<::gloo::transport::Device> gloo_device(const DistributedEnvironment& env) {
  if (const char* iface = std::getenv("GLOO_SOCKET_IFNAME"); iface && *iface)
    return c10d::ProcessGroupGloo::createDeviceForInterface(iface);
  if (env.master_addr == "127.0.0.1" || env.master_addr == "localhost")
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                      const DistributedEnvironment& env,
                                                      std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(gloo_device(env));
  options->threads = 2;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
}

class SingleRank final : public ft::Collectives {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void all_reduce_sum(at::Tensor&) override {}
  std::unique_ptr<ft::PendingCollective> all_reduce_sum_async(at::Tensor&) override {
    return std::make_unique<ft::CompletedCollective>();
  }
  void all_gather(at::Tensor& full, const at::Tensor& shard) override { full.view({-1}).copy_(shard.reshape({-1})); }
  void reduce_scatter_sum(at::Tensor& shard, const at::Tensor& full) override {
    shard.view({-1}).copy_(full.reshape({-1}));
  }
  void broadcast(at::Tensor&, int) override {}
  void barrier() override {}
};

}  // namespace

ProcessGroups single_process_groups() {
  ProcessGroups groups;
  groups.world = std::make_shared<SingleRank>();
  groups.new_group = [](const std::vector<int>& ranks) -> std::shared_ptr<ft::Collectives> {
    if (ranks.size() != 1 || ranks[0] != 0) return nullptr;
    return std::make_shared<SingleRank>();
  };
  return groups;
}

ProcessGroups connect_process_groups(const DistributedEnvironment& env, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(env.master_port);
  store_options.isServer = env.rank == 0;
  store_options.numWorkers = env.world_size;
  store_options.waitWorkers = true;
  store_options.timeout = timeout;
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options);
  } catch (const std::exception& e) {
    throw ft::Error("rank " + std::to_string(env.rank) + ": rendezvous at " + env.master_addr + ":" +
                    std::to_string(env.master_port) + " failed within " + std::to_string(timeout.count() / 1000) +
                    " s (are all " + std::to_string(env.world_size) +
                    " ranks started? is the port free?): " + e.what());
  }
  ProcessGroups groups;
  auto world_store = c10::make_intrusive<c10d::PrefixStore>("world", store);
  groups.world = std::make_shared<C10dCollectives>(gloo_group(world_store, env.rank, env.world_size, env, timeout),
                                                   env.rank, timeout);
  auto counter = std::make_shared<int>(0);
  groups.new_group = [store, env, timeout, counter](const std::vector<int>& ranks) -> std::shared_ptr<ft::Collectives> {
    const int id = (*counter)++;
    int my_index = -1;
    for (std::size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i] == env.rank) my_index = static_cast<int>(i);
    if (my_index < 0) return nullptr;
    std::string key = "group" + std::to_string(id);
    for (int r : ranks) key += "_" + std::to_string(r);
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>(key, store);
    return std::make_shared<C10dCollectives>(
        gloo_group(prefixed, my_index, static_cast<int>(ranks.size()), env, timeout), env.rank, timeout);
  };
  ft::log::info("rank {}/{}: connected to {}:{} (gloo)", env.rank, env.world_size, env.master_addr, env.master_port);
  return groups;
}

}  // namespace fthost
