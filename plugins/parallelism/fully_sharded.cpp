// fthost.parallelism.fsdp / fthost.parallelism.hsdp: fully sharded data parallelism with
// torchtune's FSDP semantics. Each sharding unit (a transformer layer; the root holds the rest)
// is one flat buffer split evenly across the shard group: a rank keeps only its slice of the
// parameters, their gradients and (through the optimizer, which steps the slices) the optimizer
// state. A unit's full parameters are gathered just before its forward and freed after it
// (reshard_after_forward), gathered again just before its backward, and its gradients are
// reduce-scattered as soon as its backward is done. HSDP adds a replicate dimension: the
// shards' gradients are then summed across the replica groups.
//
// custom_sharded_layers makes the embedding and the output projection units of their own, so
// they are gathered only around their use instead of for the whole micro-batch with the root.
// cpu_offload keeps the shards, their gradients and the optimizer step in CPU memory while the
// model computes on an accelerator: each gather copies the shard to the device first, and each
// reduced gradient is copied back to the CPU shard's gradient.
//
// With prefetch (the default on an accelerator) the next unit's all-gather is started before the current unit
// computes, in forward (the next layer) and in backward (the layer before), so its transfer
// overlaps the computation instead of preceding it: one more unit's parameters are gathered at a
// time.
//
// With the optimizer in backward a unit's shard is stepped right after its reduce-scatter and its
// gradient freed: no rank ever holds more than the units autograd is working on plus the root's.
//
// Under expert parallelism a unit's experts are a flat buffer of their own, sharded over the
// ranks of the shard group holding the same experts (torchtitan's dp_shard_mod_ep), gathered and
// reduced with the rest of the unit.
#include "backward_hook.h"
#include "model_units.h"
#include "parallelism_components.h"
#include "same_experts_group.h"
#include "split_parameter_norm.h"

#include <ft/config.h>
#include <ft/errors.h>
#include <ft/gradient_math.h>
#include <ft/log.h>
#include <ft/model_sharding.h>
#include <ft/parallelism.h>
#include <ft/torch_compat.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

namespace ft_parallelism {

namespace {

// Parameters sharded together over one group: a unit's, or under expert parallelism a unit's
// experts apart from the rest.
struct ShardedBuffer {
  std::vector<at::Tensor> parameters;  // the model's live parameters: views into `full`
  std::int64_t numel = 0;
  std::int64_t shard_numel = 0;
  at::Tensor full;              // [shard_numel * shard_size]; its storage exists only while gathered
  at::Tensor shard;             // [shard_numel], this rank's slice: the tensor the optimizer steps
  std::size_t shard_index = 0;  // in what parallelize() returned (trainable buffers)
  // Frozen parameters (requires_grad false): sharded and gathered like the rest, but no gradient
  // is reduced and the optimizer never sees the shard.
  bool frozen = false;
  std::shared_ptr<ft::Collectives> group;            // the ranks sharing `full`
  std::unique_ptr<ft::PendingCollective> gathering;  // a prefetch still in flight
  // Tensor or expert parallelism: where each parameter lies in `full` and how the model split
  // it, for the gradient norm.
  struct Segment {
    std::int64_t offset;
    std::int64_t numel;
    Placement placement;
  };
  std::vector<Segment> segments;
};

struct ShardedUnit {
  std::string name;
  std::vector<ShardedBuffer> buffers;
  bool backward_needs_parameters = true;
  bool used_after_layers = false;
  bool optional = false;  // as ft::ShardingUnit
  bool gathered = false;  // every buffer's `full` has storage: the gather is done or in flight
  bool gradients_pending = false;
};

struct ShardingOptions {
  bool reshard_after_forward = true;
  bool cpu_offload = false;
  bool prefetch = true;
  std::vector<std::string> custom_sharded_layers;
};

struct MeshShape {
  int replicate = 1;
  int shard = 1;
};

class FullySharded final : public ft::Parallelism, public ft::UnitHooks, public BackwardListener {
 public:
  FullySharded(const ft::Parallelism::Args& args, MeshShape mesh, ShardingOptions options, ft::ConfigNode cfg)
      : world_(args.world),
        new_group_(args.new_group),
        tensor_parallel_(args.tensor_parallel),
        options_(std::move(options)),
        offload_(options_.cpu_offload && !args.device.is_cpu()),
        mesh_(mesh),
        cfg_(std::move(cfg)) {
    // Mesh [replicate, shard], row-major over world ranks as torch's DeviceMesh lays it out:
    // shard groups are consecutive ranks, replicate groups are strided.
    const int world_rank = world_->rank();
    for (int r = 0; r < mesh.replicate; ++r) {
      std::vector<int> ranks;
      for (int s = 0; s < mesh.shard; ++s) ranks.push_back(r * mesh.shard + s);
      auto group = args.new_group(ranks);
      if (group) shard_group_ = group;
    }
    if (mesh.replicate > 1) {
      for (int s = 0; s < mesh.shard; ++s) {
        std::vector<int> ranks;
        for (int r = 0; r < mesh.replicate; ++r) ranks.push_back(r * mesh.shard + s);
        auto group = args.new_group(ranks);
        if (group) replicate_group_ = group;
      }
    }
    if (!shard_group_) throw ft::Error("fsdp: rank " + std::to_string(world_rank) + " is in no shard group");
  }
  ~FullySharded() override {
    // A run that failed mid-step may leave a prefetch writing into a unit's buffer.
    for (auto& u : units_) {
      for (auto& b : u.buffers) {
        try {
          if (b.gathering) b.gathering->wait();
        } catch (const std::exception&) {
        }
      }
    }
    if (sharding_) sharding_->set_unit_hooks(nullptr);
    if (model_)
      ft::log::info("fsdp: at most {} bytes of gathered parameters were held at once on rank {} while training",
                    peak_gathered_bytes_, world_->rank());
  }

  int data_parallel_rank() const override { return world_->rank(); }
  int data_parallel_size() const override { return world_->size(); }

  std::vector<at::Tensor> parallelize(ft::Model& model) override {
    sharding_ = ft::role_of<ft::ModelSharding>(model);
    if (!sharding_ && !options_.custom_sharded_layers.empty())
      cfg_.fail("custom_sharded_layers", "this model has no modules it can shard separately (asked for " +
                                             options_.custom_sharded_layers.front() + ")");
    try {
      if (sharding_)
        for (const std::string& note : sharding_->shard_separately(options_.custom_sharded_layers))
          if (world_->rank() == 0) ft::log::info("fsdp: custom_sharded_layers: {}", note);
    } catch (const ft::Error& e) {
      cfg_.fail("custom_sharded_layers", e.what());
    }
    model_ = &model;
    norm_ = SplitParameterNorm(tensor_parallel_, model);
    std::shared_ptr<ft::Collectives> same_experts;
    if (const auto& expert_parallel = norm_.expert_parallel()) {
      const int ep = expert_parallel->size();
      if (mesh_.shard % ep != 0)
        cfg_.fail("data_parallel_shard_dim", std::to_string(mesh_.shard) +
                                                 " is not a multiple of expert_parallel_dim " + std::to_string(ep) +
                                                 ": the experts are split within each shard group (its ranks "
                                                 "holding the same experts shard them)");
      same_experts = same_experts_group(new_group_, world_->rank(), world_->size(), mesh_.shard, ep);
    }
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> shards;
    for (auto& group : group_parameters(model)) {
      ShardedUnit u;
      u.name = group.name;
      u.backward_needs_parameters = group.backward_needs_parameters;
      u.used_after_layers = group.used_after_layers;
      u.optional = group.optional;
      // One buffer per reduction group, trainable and frozen parameters apart.
      std::vector<at::Tensor> shared, experts, frozen_shared, frozen_experts;
      for (const auto& p : group.parameters) {
        const bool expert = same_experts && norm_.is_expert_share(p);
        if (p.requires_grad())
          (expert ? experts : shared).push_back(p);
        else
          (expert ? frozen_experts : frozen_shared).push_back(p);
      }
      for (auto* parameters : {&shared, &experts, &frozen_shared, &frozen_experts}) {
        if (parameters->empty()) continue;
        const bool expert_buffer = parameters == &experts || parameters == &frozen_experts;
        const bool frozen = parameters == &frozen_shared || parameters == &frozen_experts;
        ShardedBuffer b = make_buffer(std::move(*parameters), expert_buffer ? same_experts : shard_group_, frozen);
        if (!frozen) {
          b.shard_index = shards.size();
          shards.push_back(b.shard);
        }
        u.buffers.push_back(std::move(b));
      }
      if (u.buffers.empty()) continue;
      units_.push_back(std::move(u));
    }
    root_ = units_.size() - 1;  // group_parameters puts the root last
    // The model lists its layers first; units after them are its separately sharded modules.
    layer_count_ = leading_layer_count(units_, root_);
    if (sharding_) sharding_->set_unit_hooks(this);
    shards_ = shards;
    std::int64_t full_bytes = 0;
    for (const auto& u : units_)
      for (const auto& b : u.buffers) full_bytes += b.numel * static_cast<std::int64_t>(b.shard.element_size());
    ft::log::info("fsdp: {} units over {} shard ranks{}; this rank holds {} of {} parameter bytes", units_.size(),
                  shard_group_->size(),
                  mesh_.replicate > 1 ? " x " + std::to_string(mesh_.replicate) + " replicas" : std::string(),
                  local_parameter_bytes(), full_bytes);
    return shards;
  }

  void begin_micro_batch(bool) override {
    // A forward without gradients (no end_micro_batch) may have left units gathered.
    for (std::size_t u = 0; u < root_; ++u)
      if (!units_[u].gradients_pending) reshard(u);
    backward_started_ = false;
    gather(root_);
    if (layer_count_ > 0) prefetch(0);  // while the root embeds the tokens
  }

  void before_forward(std::size_t unit) override {
    gather(unit);
    // Not during backward, where activation checkpointing reruns a layer's forward: the layer
    // after it has already finished.
    if (!backward_started_ && unit + 1 < layer_count_) prefetch(unit + 1);
    // A module used after the layers gets no after_forward: it stays gathered through the
    // loss and its own backward, until the backward reaches the last layer.
    if (units_[unit].used_after_layers && at::GradMode::is_enabled()) units_[unit].gradients_pending = true;
  }

  at::Tensor after_forward(std::size_t unit, at::Tensor output) override {
    if (!units_[unit].backward_needs_parameters) {
      // An embedding lookup: its backward scatters into the gradient without reading the weight.
      reshard(unit);
      if (at::GradMode::is_enabled()) units_[unit].gradients_pending = true;
      return output;
    }
    if (options_.reshard_after_forward) reshard(unit);
    if (!at::GradMode::is_enabled()) return output;
    return notify_before_backward(output, *this, unit);
  }

  // The unit after `unit` has finished its backward (autograd accumulates each parameter's
  // gradient before moving on); `unit` is about to start its own.
  void before_unit_backward(std::size_t unit) override {
    backward_started_ = true;
    if (unit + 1 < layer_count_ && units_[unit + 1].gradients_pending) {
      reduce_gradients(unit + 1);
      reshard(unit + 1);
    }
    if (unit + 1 == layer_count_) {
      // Everything used after the layers (the output projection) has finished its backward.
      for (std::size_t u = layer_count_; u < root_; ++u) {
        ShardedUnit& after = units_[u];
        if (!after.used_after_layers) continue;
        // A tied embedding's gradient still waits for the lookup's backward.
        if (after.gradients_pending && after.backward_needs_parameters) reduce_gradients(u);
        reshard(u);
      }
    }
    // Consecutive optional units (a vision tower's stages) run in order: once the backward reaches
    // one, the next has finished its own, so its parameters can go; its gradient waits for the
    // ranks' agreement at the end of the micro-batch.
    if (units_[unit].optional && unit + 1 < root_ && units_[unit + 1].optional) reshard(unit + 1);
    gather(unit);
    if (unit > 0 && unit <= layer_count_ && !units_[unit].optional && units_[unit - 1].backward_needs_parameters)
      prefetch(unit - 1);
    units_[unit].gradients_pending = true;
  }

  void end_micro_batch() override {
    agree_on_optional_units();
    for (std::size_t u = 0; u < units_.size(); ++u) {
      if (units_[u].gradients_pending || u == root_) reduce_gradients(u);
      reshard(u);
    }
    finish_reductions();
  }

  void all_reduce_sum(at::Tensor& tensor) override { world_->all_reduce_sum(tensor); }
  void scale_gradients(double factor) override { ft::scale_gradients(shards_, factor); }
  double clip_grad_norm(double max_norm) override {
    if (norm_.active()) return clip_split_grad_norm(max_norm);
    // Replicas hold identical shards: the norm is a sum over one shard group.
    at::Tensor squares = at::full({1}, ft::gradient_norm_squared(shards_), at::kDouble);
    shard_group_->all_reduce_sum(squares);
    const double norm = std::sqrt(squares.item<double>());
    ft::clip_gradients(shards_, norm, max_norm);
    return norm;
  }

  void with_full_parameters(ft::Model&, const std::function<void()>& fn) override {
    // A checkpoint needs the whole model at once whatever the units; the peak counts training.
    counting_peak_ = false;
    for (std::size_t u = 0; u < units_.size(); ++u) gather(u);
    try {
      fn();
    } catch (...) {
      for (std::size_t u = 0; u < units_.size(); ++u) reshard(u);
      counting_peak_ = true;
      throw;
    }
    for (std::size_t u = 0; u < units_.size(); ++u) reshard(u);
    counting_peak_ = true;
  }

  bool shards_optimizer_state() const override { return true; }
  bool handles_expert_parallel() const override { return true; }

  std::int64_t local_parameter_bytes() const override { return total_bytes(shards_); }

  // A unit's index is its shard's index in what parallelize() returned.
  void set_gradient_ready_callback(GradientReadyCallback ready) override { ready_ = std::move(ready); }

 private:
  // Each shard's gradient split at its parameters' boundaries, the squares summed by how the model
  // split each parameter: over each buffer's shard group first (replicas hold identical shards),
  // then as SplitParameterNorm sums them over the tensor- and expert-parallel groups.
  double clip_split_grad_norm(double max_norm) {
    at::NoGradGuard no_grad;
    std::map<ft::Collectives*, std::array<std::vector<at::Tensor>, 4>> norms_by_group;
    for (const auto& u : units_) {
      for (const auto& b : u.buffers) {
        auto& norms = norms_by_group[b.group.get()];
        if (!b.shard.grad().defined()) continue;
        const at::Tensor grad = b.shard.grad();
        const std::int64_t begin = b.group->rank() * b.shard_numel, end = begin + b.shard_numel;
        for (const auto& segment : b.segments) {
          const std::int64_t lo = std::max(begin, segment.offset);
          const std::int64_t hi = std::min(end, segment.offset + segment.numel);
          if (lo >= hi) continue;
          norms[static_cast<std::size_t>(segment.placement)].push_back(
              at::linalg_vector_norm(grad.narrow(0, lo - begin, hi - lo), 2, {}, false, at::kFloat));
        }
      }
    }
    SplitParameterNorm::Squares total{};
    // The shard group first, then the experts' group: the same order on every rank.
    std::vector<ft::Collectives*> groups{shard_group_.get()};
    for (const auto& entry : norms_by_group)
      if (entry.first != shard_group_.get()) groups.push_back(entry.first);
    for (ft::Collectives* group : groups) {
      const SplitParameterNorm::Squares local = squares_by_placement(norms_by_group[group]);
      at::Tensor squares = at::tensor(std::vector<double>(local.begin(), local.end()), at::kDouble);
      group->all_reduce_sum(squares);
      for (std::size_t i = 0; i < total.size(); ++i) total[i] += squares[static_cast<std::int64_t>(i)].item<double>();
    }
    const double norm = std::sqrt(norm_.total_squared(total));
    ft::clip_gradients(shards_, norm, max_norm);
    return norm;
  }

  // `parameters` become views of one flat buffer sharded over `group`; this rank keeps its slice.
  ShardedBuffer make_buffer(std::vector<at::Tensor> parameters, std::shared_ptr<ft::Collectives> group, bool frozen) {
    ShardedBuffer b;
    b.frozen = frozen;
    b.parameters = std::move(parameters);
    b.group = std::move(group);
    const int n = b.group->size();
    b.numel = total_numel(b.parameters);
    b.shard_numel = (b.numel + n - 1) / n;
    const auto options = b.parameters[0].options().requires_grad(false);
    b.full = at::zeros({b.shard_numel * n}, options);
    std::int64_t offset = 0;
    for (auto& p : b.parameters) {
      if (norm_.active()) b.segments.push_back({offset, p.numel(), norm_.placement_of(p)});
      b.full.narrow(0, offset, p.numel()).copy_(p.reshape({-1}));
      p.set_data(b.full.narrow(0, offset, p.numel()).view(p.sizes()));
      offset += p.numel();
    }
    // Every rank loaded the same weights; rank 0's copy is the reference (for experts, the first
    // rank holding the same ones).
    if (b.group == shard_group_) {
      world_->broadcast(b.full, 0);
    } else {
      b.group->broadcast(b.full, 0);
      if (replicate_group_) replicate_group_->broadcast(b.full, 0);
    }
    at::Tensor slice = b.full.narrow(0, b.group->rank() * b.shard_numel, b.shard_numel);
    b.shard = (offload_ ? ft::compat::to_cpu_for_offload(slice) : slice.clone()).requires_grad_(!frozen);
    ft::compat::free_storage(b.full);
    return b;
  }

  // The unit's full parameters, ready to compute with.
  void gather(std::size_t index) {
    start_gather(index);
    finish_gather(index);
  }

  void prefetch(std::size_t index) {
    if (options_.prefetch) start_gather(index);
  }

  void start_gather(std::size_t index) {
    ShardedUnit& u = units_[index];
    if (u.gathered) return;
    u.gathered = true;
    for (auto& b : u.buffers) {
      const auto bytes = static_cast<std::size_t>(b.full.numel()) * b.full.element_size();
      ft::compat::allocate_storage(b.full, bytes);
      // Written through an alias with its own version counter: autograd has saved these
      // parameters for backward and must not see the refill as an in-place modification.
      at::Tensor alias = at::from_blob(b.full.data_ptr(), {b.full.numel()}, b.full.options());
      at::Tensor local = b.shard.detach();
      if (offload_) local = local.to(b.full.device(), /*non_blocking=*/true);
      b.gathering = b.group->all_gather_async(alias, local);
      gathered_bytes_ += static_cast<std::int64_t>(bytes);
    }
    if (counting_peak_) peak_gathered_bytes_ = std::max(peak_gathered_bytes_, gathered_bytes_);
  }

  void finish_gather(std::size_t index) {
    for (auto& b : units_[index].buffers)
      if (auto pending = std::move(b.gathering)) pending->wait();
  }

  void reshard(std::size_t index) {
    ShardedUnit& u = units_[index];
    if (!u.gathered) return;
    finish_gather(index);  // the transfer writes into the storage about to be freed
    for (auto& b : u.buffers) {
      ft::compat::free_storage(b.full);
      gathered_bytes_ -= b.full.numel() * static_cast<std::int64_t>(b.full.element_size());
    }
    u.gathered = false;
  }

  // Starts the reduce-scatter of a unit's gradients; it runs while autograd works on the units
  // before it. The one started before is finished first, so at most two units' flat gradient
  // buffers are alive at once.
  void reduce_gradients(std::size_t index) {
    ShardedUnit& u = units_[index];
    u.gradients_pending = false;
    at::NoGradGuard no_grad;
    std::vector<Reduction> started;
    for (std::size_t i = 0; i < u.buffers.size(); ++i) {
      ShardedBuffer& b = u.buffers[i];
      if (b.frozen) continue;
      at::Tensor flat = at::zeros({b.full.numel()}, b.full.options().requires_grad(false));
      std::int64_t offset = 0;
      for (auto& p : b.parameters) {
        // A rank no gradient reached still takes part: the others may have one.
        if (p.grad().defined()) {
          flat.narrow(0, offset, p.numel()).copy_(p.grad().reshape({-1}));
          p.mutable_grad() = at::Tensor();
        }
        offset += p.numel();
      }
      at::Tensor local = at::empty({b.shard_numel}, flat.options());
      auto work = b.group->reduce_scatter_sum_async(local, flat);
      started.push_back({index, i, local, std::move(work)});
    }
    finish_reductions();
    for (auto& reduction : started) reducing_.push_back(std::move(reduction));
  }

  // An optional unit some rank did not use this micro-batch: every rank reduces it when any used
  // it (the others add zeros), none when no rank did, so the collectives match.
  void agree_on_optional_units() {
    std::vector<std::size_t> optional;
    std::vector<bool> used_here;
    for (std::size_t u = 0; u < units_.size(); ++u) {
      if (!units_[u].optional) continue;
      optional.push_back(u);
      used_here.push_back(units_[u].gradients_pending);
    }
    if (optional.empty()) return;
    const std::vector<bool> used = used_on_any_rank(*world_, used_here);
    for (std::size_t i = 0; i < optional.size(); ++i) units_[optional[i]].gradients_pending = used[i];
  }

  void finish_reductions() {
    at::NoGradGuard no_grad;
    for (auto& reduction : reducing_) {
      reduction.work->wait();
      at::Tensor local = reduction.local;
      if (replicate_group_) replicate_group_->all_reduce_sum(local);
      if (offload_) local = local.to(at::kCPU);
      ShardedBuffer& b = units_[reduction.unit].buffers[reduction.buffer];
      if (b.shard.grad().defined()) {
        b.shard.mutable_grad().add_(local);
      } else {
        b.shard.mutable_grad() = local;
      }
      if (ready_) ready_(b.shard_index);
    }
    reducing_.clear();
  }

  struct Reduction {
    std::size_t unit;
    std::size_t buffer;
    at::Tensor local;  // this rank's slice of the sum, once `work` is done
    std::unique_ptr<ft::PendingCollective> work;
  };
  std::vector<Reduction> reducing_;

  std::shared_ptr<ft::Collectives> world_;
  ft::GroupFactory new_group_;
  std::shared_ptr<ft::Collectives> tensor_parallel_;
  SplitParameterNorm norm_;
  std::shared_ptr<ft::Collectives> shard_group_;
  std::shared_ptr<ft::Collectives> replicate_group_;
  ShardingOptions options_;
  bool offload_;  // cpu_offload on an accelerator (on a CPU run everything lives in CPU memory anyway)
  MeshShape mesh_;
  ft::ConfigNode cfg_;
  ft::Model* model_ = nullptr;
  ft::ModelSharding* sharding_ = nullptr;  // the model's sharding role; nullptr: one unit
  std::vector<ShardedUnit> units_;
  std::vector<at::Tensor> shards_;
  std::size_t root_ = 0;
  GradientReadyCallback ready_;
  std::size_t layer_count_ = 0;
  std::int64_t gathered_bytes_ = 0;       // full parameters allocated right now on this rank
  std::int64_t peak_gathered_bytes_ = 0;  // the most of them at any moment of training
  bool counting_peak_ = true;             // false while a checkpoint gathers the whole model
  bool backward_started_ = false;         // in this micro-batch
};

ft::Schema sharded_schema(bool hybrid) {
  ft::Schema s;
  s.optional("data_parallel_shard_dim", ft::ValueType::Int, "-1",
             "ranks a parameter is sharded over (-1: all the rest)")
      .optional("data_parallel_replicate_dim", ft::ValueType::Int, hybrid ? "2" : "1", "replica groups (HSDP)")
      .optional("reshard_after_forward", ft::ValueType::Bool, "true",
                "free gathered parameters after each unit's forward (false: keep them until its backward)")
      .optional("custom_sharded_layers", ft::ValueType::List, "[]",
                "modules sharded as units of their own, gathered only around their use instead of with the root "
                "for the whole micro-batch: \"tok_embeddings\", \"output\" (a tied output is the embedding)")
      .optional("cpu_offload", ft::ValueType::Bool, "false",
                "on an accelerator: shards, gradients and the optimizer step stay in CPU memory, copied to the "
                "device per gather; no effect on a CPU run, where they already live in CPU memory")
      .optional("prefetch", ft::ValueType::Bool, "",
                "start gathering the next unit's parameters before the current unit computes (forward: the next "
                "layer, backward: the one before), so the transfer overlaps the computation; holds one more unit "
                "gathered at a time. Unset: on for a CUDA run, off on a CPU, where Gloo's transfer competes with the "
                "computation for the same cores (measured 0.98x, docs/distributed.md)");
  return s;
}

std::unique_ptr<ft::Parallelism> make_sharded(const ft::ConfigNode& cfg, ft::Parallelism::Args args) {
  if (!args.world || !args.new_group)
    cfg.fail("_component_", "sharded data parallelism needs the host's process groups");
  const int world = args.world->size();
  MeshShape mesh;
  mesh.replicate = static_cast<int>(cfg.get<std::int64_t>("data_parallel_replicate_dim"));
  const auto shard = cfg.get<std::int64_t>("data_parallel_shard_dim");
  if (mesh.replicate < 1) cfg.fail("data_parallel_replicate_dim", "expected an integer >= 1");
  // Under tensor parallelism `world` is the data-parallel ranks: the run's ranks / tensor_parallel_dim.
  const int tp = args.tensor_parallel ? args.tensor_parallel->size() : 1;
  const std::string ranks = tp > 1 ? std::to_string(world) + " data-parallel ranks of this run (its " +
                                         std::to_string(world * tp) + " ranks / tensor_parallel_dim " +
                                         std::to_string(tp) + ")"
                                   : std::to_string(world) + " ranks of this run";
  if (world % mesh.replicate != 0)
    cfg.fail("data_parallel_replicate_dim", std::to_string(mesh.replicate) + " does not divide the " + ranks);
  // Context-parallel ranks hold the same parameters and shard them among themselves too.
  const int cp = std::max(args.context_parallel_size, 1);
  mesh.shard = shard == -1 ? world / mesh.replicate : static_cast<int>(shard) * cp;
  if (shard != -1 && shard < 1) cfg.fail("data_parallel_shard_dim", "expected -1 or an integer >= 1");
  if (mesh.shard < 1 || mesh.shard * mesh.replicate != world)
    cfg.fail("data_parallel_shard_dim",
             "replicate (" + std::to_string(mesh.replicate) + ") x shard (" + std::to_string(shard) +
                 (cp > 1 ? ") x context_parallel_dim (" + std::to_string(cp) : "") +
                 (tp > 1 ? ") x tensor_parallel_dim (" + std::to_string(tp) + ") must equal the " +
                               std::to_string(world * tp) + " ranks of this run"
                         : ") must equal the " + std::to_string(world) + " ranks of this run"));
  ShardingOptions options;
  options.reshard_after_forward = cfg.get<bool>("reshard_after_forward");
  options.cpu_offload = cfg.get<bool>("cpu_offload");
  options.prefetch = cfg.has("prefetch") ? cfg.get<bool>("prefetch") : !args.device.is_cpu();
  if (args.world->rank() == 0)
    ft::log::info("fsdp: prefetch {}{}", options.prefetch ? "on" : "off",
                  cfg.has("prefetch")    ? ""
                  : args.device.is_cpu() ? " (the default on a CPU; parallelism.prefetch = true turns it on)"
                                         : " (the default on an accelerator)");
  options.custom_sharded_layers = cfg.get<std::vector<std::string>>("custom_sharded_layers");
  if (options.cpu_offload && args.world->rank() == 0) {
    if (args.device.is_cpu())
      ft::log::info(
          "fsdp: cpu_offload = true changes nothing on a CPU run: parameters, gradients and optimizer state already "
          "live in CPU memory");
    else
      ft::log::info("fsdp: cpu_offload: shards, gradients and the optimizer step stay in CPU memory; {} computes",
                    args.device.str());
  }
  return std::make_unique<FullySharded>(args, mesh, std::move(options), cfg);
}

}  // namespace

void register_fully_sharded(ft::Registry& reg) {
  reg.add<ft::Parallelism>("fthost.parallelism.fsdp", sharded_schema(false),
                           "fully sharded data parallel: parameters, gradients and optimizer state sharded per layer",
                           make_sharded);
  reg.add<ft::Parallelism>("fthost.parallelism.hsdp", sharded_schema(true),
                           "hybrid sharded: replicate x shard mesh (shard within groups, all-reduce across them)",
                           make_sharded);
}

}  // namespace ft_parallelism
