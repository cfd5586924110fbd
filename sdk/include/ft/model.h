// Model interface (`torchtune.models.*` builders). A model is a torch::nn::Module plus what the
// recipe, the losses and the checkpointer need to know about it: how to run it, its output
// projection, and how its parameters are named in Hugging Face checkpoints.
#pragma once

#include <ft/errors.h>
#include <ft/kind.h>
#include <ft/tensor_parallel.h>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ft {

struct ModelInput {
  at::Tensor tokens;     // [b, s] int64
  at::Tensor input_pos;  // [b, s] int64 positions; undefined: 0..s-1 for every row
  at::Tensor mask;       // [b, s, s] bool, true = may attend; undefined: causal
};

// What the loss wants back: chunked logits (CEWithChunkedOutputLoss) or only the final hidden
// state (LinearCrossEntropyLoss projects it chunk by chunk itself).
struct OutputRequest {
  int num_output_chunks = 1;
  bool hidden_only = false;
};

struct ModelOutput {
  std::vector<at::Tensor> logits;  // chunks along the sequence, each [b, s_i, vocab]; empty if hidden_only
  at::Tensor hidden;               // [b, s, dim] after the final norm; set when hidden_only
  // Set under tensor parallelism when the logits, and output_weight(), hold only this rank's
  // slice of the vocabulary (loss parallel): the loss must use vocab_parallel_cross_entropy_sum.
  std::optional<VocabShard> vocab_shard;
  // Set with hidden_only when the model soft-caps its logits (Gemma 2: cap * tanh(logits / cap)):
  // a loss that projects `hidden` itself must cap what it computes. 0: no cap.
  double final_logit_softcap = 0;
};

// One parameter under its Hugging Face name. `tensor` is the live parameter (same storage).
struct NamedTensor {
  NamedTensor() = default;
  NamedTensor(std::string name_, at::Tensor tensor_, std::vector<at::Tensor> parts_ = {})
      : name(std::move(name_)), tensor(std::move(tensor_)), parts(std::move(parts_)) {}
  std::string name;
  at::Tensor tensor;
  // Set instead of `tensor` when the checkpoint stores several live parameters as one tensor
  // (Phi-3's qkv_proj = [q; k; v]): the parts, concatenated along dimension 0 in this order.
  // Read and write such an entry through checkpoint_value / assign_checkpoint_value.
  std::vector<at::Tensor> parts;
};

// The tensor a checkpoint holds under `t.name`: the live parameter, or the parts concatenated (a
// copy, made only when asked for, so listing a model's names and shapes allocates nothing).
at::Tensor checkpoint_value(const NamedTensor& t);
std::vector<std::int64_t> checkpoint_shape(const NamedTensor& t);
// Copies `value` (checkpoint_shape(t), any dtype and device) into the live parameter or parts.
void assign_checkpoint_value(const NamedTensor& t, const at::Tensor& value);

// A group of parameters that sharded data parallelism gathers and frees together: torchtune's
// FSDP wraps each transformer layer this way. Units are listed in forward order.
struct ShardingUnit {
  std::string name;                    // e.g. "layers.3"
  std::vector<at::Tensor> parameters;  // the live parameters (same storage as the module's)

  // --- Separately sharded modules (torchtune's custom_sharded_layers) ---
  // false for a unit whose backward needs no parameter values (an embedding lookup): its
  // parameters can be freed right after its forward, whatever reshard_after_forward says.
  bool backward_needs_parameters = true;
  // true for a unit used after the layers, possibly by the loss after the model's forward has
  // returned (the output projection): the model calls before_forward() on every use and never
  // after_forward(); its parameters stay gathered until the backward reaches the last layer.
  bool used_after_layers = false;
};

// Called by the model around each unit's forward, so a strategy can gather the unit's
// parameters just before use and hook its backward. `after_forward` returns the tensor the
// model continues with (the strategy may wrap it in an autograd node).
class UnitHooks {
 public:
  virtual ~UnitHooks() = default;
  virtual void before_forward(std::size_t unit) = 0;
  virtual at::Tensor after_forward(std::size_t unit, at::Tensor output) = 0;
};

class Model {
 public:
  static constexpr Kind kind = Kind::Model;
  struct Args {
    c10::ScalarType dtype = c10::ScalarType::Float;
    c10::Device device = c10::Device(c10::DeviceType::CPU);
    std::uint64_t seed = 0;  // random initialisation before any checkpoint is loaded
  };

  virtual ~Model() = default;
  virtual torch::nn::Module& module() = 0;
  virtual ModelOutput forward(const ModelInput& input, const OutputRequest& request = {}) = 0;
  // The [vocab, dim] output projection (the embedding when tied).
  virtual at::Tensor output_weight() = 0;
  // Every trainable tensor exactly once, under its Hugging Face name, in checkpoint order.
  virtual std::vector<NamedTensor> hf_parameters() = 0;
  // Hugging Face names a checkpoint may hold that this model deliberately ignores
  // (e.g. `lm_head.weight` of a tied model, rotary caches).
  virtual bool ignorable_hf_name(const std::string& name) const {
    (void)name;
    return false;
  }
  // A Hugging Face `config.json` describing this architecture, for checkpoints of models
  // initialised from scratch.
  virtual std::string hf_config_json() const = 0;
  virtual std::int64_t vocab_size() const = 0;
  // Training FLOPs (forward and backward) per processed position of a `seq_len`-long sequence,
  // for the logged mfu: 6 x the parameters each position multiplies through, plus attention's
  // 12 x layers x heads x head_dim x seq_len, as torchtitan counts. 0: unknown (nothing logged).
  virtual double training_flops_per_position(std::int64_t seq_len) const {
    (void)seq_len;
    return 0;
  }
  // Units for sharded data parallelism; parameters in no unit form the root unit. Empty: the
  // model can only be sharded as one unit.
  virtual std::vector<ShardingUnit> sharding_units() { return {}; }
  // `hooks` (not owned; nullptr removes them) is called around every unit's forward.
  virtual void set_unit_hooks(UnitHooks* hooks) { (void)hooks; }

  // Activation checkpointing (ft/activation_checkpointing.h): how many layers the model can
  // checkpoint one by one (0: none), and which of them to checkpoint from now on, one flag per
  // layer in forward order. The host calls it before parallelizing the model.
  virtual std::int64_t num_checkpointable_layers() const { return 0; }
  virtual void set_activation_checkpointing(const std::vector<bool>& layers) {
    (void)layers;
    throw Error("this model does not support activation checkpointing");
  }
  // Activation offloading: the inputs the checkpointed layers keep for their recompute stay in
  // host memory until backward (ft::CheckpointOptions::offload_input). Called after
  // set_activation_checkpointing, on CUDA runs only.
  virtual void set_activation_offloading(bool offload) {
    if (offload) throw Error("this model does not support activation offloading");
  }

  // --- Separately sharded modules (torchtune's custom_sharded_layers) ---
  // Makes each named module (torchtune's module names: "tok_embeddings", "output") a sharding
  // unit of its own, listed by sharding_units() after the layers, and has the model call the unit
  // hooks around its use. Names of modules that already are units ("layers.3") are accepted as
  // they are. Returns a note for each name accepted without effect (a tied "output"). Throws
  // ft::Error naming every name the model has no module for.
  virtual std::vector<std::string> shard_separately(const std::vector<std::string>& module_names) {
    if (!module_names.empty())
      throw Error("this model has no modules it can shard separately (asked for " + module_names.front() + ")");
    return {};
  }

  // --- Tensor parallelism (ft/tensor_parallel.h) ---
  // Splits the modules `plan` names across the ranks of `group` (torchtune's prepare_mha_for_tp
  // and parallelize_module): each rank keeps its slice of their parameters, attention its share
  // of the heads, and the forward communicates over `group`. Called once, after the weights are
  // loaded and before the parallelism strategy distributes the model. Throws ft::Error naming
  // the plan entry the model cannot apply (a module it lacks, a style it cannot split it by,
  // head counts the group size does not divide).
  virtual void apply_tensor_parallel(const std::vector<ModuleParallelism>& plan,
                                     const std::shared_ptr<Collectives>& group) {
    (void)plan;
    (void)group;
    throw Error("this model does not support tensor parallelism");
  }
  // The parameters apply_tensor_parallel split (each rank of the group holds a different slice);
  // every other parameter is whole and identical on every rank of the group.
  virtual std::vector<at::Tensor> tensor_parallel_shards() { return {}; }
  // Collective over the tensor-parallel group: runs `fn` with every split parameter whole
  // (readable through hf_parameters()), then restores the slices.
  virtual void with_full_tensor_parallel_parameters(const std::function<void()>& fn) { fn(); }
  // --- Generation: a key/value cache (torchtune's setup_caches / reset_caches) ---
  // The longest sequence the model takes (its max_seq_len); 0: no limit is known.
  virtual std::int64_t max_seq_len() const { return 0; }
  virtual bool supports_kv_cache() const { return false; }
  // Allocates, for every attention layer, the keys and values of `batch_size` sequences of up to
  // `max_seq_len` tokens. From then on forward() is incremental, for inference without autograd:
  // input.input_pos (required) says where input.tokens sit in their sequences, their keys and
  // values are written to the cache there, and each token attends to the cached positions up to
  // its own (causal; input.mask must be undefined). Prefill a prompt in one call, then feed one
  // token per call: each new token costs attention over the positions so far, not a recompute.
  virtual void setup_caches(std::int64_t batch_size, std::int64_t max_seq_len) {
    (void)batch_size;
    (void)max_seq_len;
    throw Error("this model has no key/value cache for generation");
  }
  // Forgets every cached position (a new sequence), keeping the memory.
  virtual void reset_caches() {}
  // Frees the caches: forward() is the full-sequence forward again.
  virtual void remove_caches() {}
};

}  // namespace ft
