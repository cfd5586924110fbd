// Parallelism strategy interface (`fthost.parallelism.*`): how the ranks of a run share the
// model. The recipe's loop is the same for every strategy; the strategy decides which tensors
// the optimizer steps (whole parameters or shards), how gradients are reduced, and how the full
// model is made readable for a checkpoint.
//
// Per optimizer step the recipe calls, for each micro-batch:
//   begin_micro_batch(last) -> model forward -> loss.backward() -> end_micro_batch()
// then all_reduce_sum (token count, loss), scale_gradients, clip_grad_norm, optimizer step.
#pragma once

#include <ft/collectives.h>
#include <ft/errors.h>
#include <ft/kind.h>
#include <ft/model.h>

#include <c10/core/Device.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace ft {

class Parallelism {
 public:
  static constexpr Kind kind = Kind::Parallelism;
  struct Args {
    // Every data-parallel rank: the whole run, or under tensor parallelism the ranks that hold the
    // same slices as this one (one per tensor-parallel group). Ranks passed to new_group are
    // ranks of this group.
    std::shared_ptr<Collectives> world;
    GroupFactory new_group;  // sub-groups (mesh dimensions)
    int local_rank = 0;
    int local_world_size = 1;
    c10::Device device = c10::Device(c10::DeviceType::CPU);
    // This rank's tensor-parallel group (tensor_parallel_dim ranks), nullptr without tensor
    // parallelism. The model's tensor_parallel_shards() are then slices: a gradient norm sums
    // their squares over this group and counts every other (replicated) parameter once.
    std::shared_ptr<Collectives> tensor_parallel;
    // Context parallelism (ABI 10): `world` holds context_parallel_size consecutive ranks per
    // sequence. They reduce gradients like any data-parallel ranks; a sharded strategy shards
    // over data_parallel_shard_dim x context_parallel_size ranks (torchtitan's dp_shard_cp).
    int context_parallel_size = 1;
  };

  virtual ~Parallelism() = default;
  // The data-parallel coordinates of this rank: which slice of the data it reads.
  virtual int data_parallel_rank() const = 0;
  virtual int data_parallel_size() const = 0;

  // Distributes the model (loaded identically on every rank) and returns the tensors the
  // optimizer updates; their .grad holds the reduced gradient after end_micro_batch().
  virtual std::vector<at::Tensor> parallelize(Model& model) = 0;

  // `syncs_gradients`: false for micro-batches that only accumulate locally.
  virtual void begin_micro_batch(bool syncs_gradients) = 0;
  virtual void end_micro_batch() = 0;

  // Sum over the data-parallel ranks (token counts, the running loss).
  virtual void all_reduce_sum(at::Tensor& tensor) = 0;
  // grad *= factor on the optimizer's tensors, nothing else (without clipping the recipe skips
  // it for an optimizer that folds the factor into its step: Optimizer::step_with_gradient_scale).
  virtual void scale_gradients(double factor) = 0;
  // The total L2 norm of the whole model's gradient, clipped to `max_norm` when finite.
  virtual double clip_grad_norm(double max_norm) = 0;

  // Collective: runs `fn` with every parameter of `model` holding its full value (readable
  // through model.hf_parameters()), then restores the distributed layout.
  virtual void with_full_parameters(Model& model, const std::function<void()>& fn) = 0;

  // True when each rank's optimizer steps a different slice of the model (FSDP), so every
  // rank's optimizer state belongs in a checkpoint; false when rank 0's is the whole state.
  virtual bool shards_optimizer_state() const { return false; }

  // Optimizer in backward (optimizer_in_bwd): once set, in every micro-batch that syncs
  // gradients, `ready(i)` is called as soon as trainable tensor i's (reduced) gradient is final
  // (i indexes what parallelize() returned), during backward or at the latest in
  // end_micro_batch(). The callee steps tensor i and may free its .grad; the strategy does not
  // touch that gradient again. Under DDP / FSDP every index is called exactly once per such
  // micro-batch (a tensor without a local gradient gets the others' reduced one); on one device
  // a parameter that received no gradient is not called, as torch's optimizers skip a None grad.
  using GradientReadyCallback = std::function<void(std::size_t trainable_index)>;
  virtual void set_gradient_ready_callback(GradientReadyCallback ready) {
    (void)ready;
    throw Error("this parallelism strategy cannot run the optimizer in backward (optimizer_in_bwd)");
  }

  // Whether parallelize() handles a model whose experts are split across an expert-parallel
  // group (ft/model_expert_parallelism.h): those parameters' gradients summed only over the
  // data-parallel ranks holding the same experts, their norm counted once per expert. The host
  // refuses expert_parallel_dim > 1 with a strategy that does not.
  virtual bool handles_expert_parallel() const { return false; }

  // Bytes of parameters, gradients and optimizer-visible tensors this rank holds persistently.
  virtual std::int64_t local_parameter_bytes() const = 0;
};

}  // namespace ft
