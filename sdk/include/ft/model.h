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

class Registry;

struct ModelInput {
  at::Tensor tokens;     // [b, s] int64
  at::Tensor input_pos;  // [b, s] int64 positions; undefined: 0..s-1 for every row
  at::Tensor mask;       // [b, s, s] bool, true = may attend; undefined: causal
  // Packed rows (given only to a model whose attends_within_documents() is true, instead of a
  // block-causal mask): the lengths of each row's documents, in order, summing to s. Each
  // document attends within itself as a sequence of its own.
  std::vector<std::vector<std::int64_t>> document_lengths;
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
  // Mixture-of-experts models. The auxiliary (load-balancing) loss of this forward, already
  // weighted by its coefficient: a float32 scalar the recipe adds to the training objective;
  // undefined when the model computes none.
  at::Tensor auxiliary_loss;
  // The tokens this forward routed to each expert, [sparse layers, experts] int64 (each token
  // counted once per expert it chose); undefined for a dense model.
  at::Tensor expert_load;
};

// One parameter under its Hugging Face name. `tensor` is the live parameter (same storage), or a
// view of one (one expert's slice of a stacked expert parameter).
struct NamedTensor {
  NamedTensor() = default;
  NamedTensor(std::string name_, at::Tensor tensor_, std::vector<at::Tensor> parts_ = {}, std::int64_t parts_dim_ = 0)
      : name(std::move(name_)), tensor(std::move(tensor_)), parts(std::move(parts_)), parts_dim(parts_dim_) {}
  std::string name;
  at::Tensor tensor;
  // Set instead of `tensor` when the checkpoint stores several live parameters as one tensor
  // (Phi-3's qkv_proj = [q; k; v]): the parts, concatenated along `parts_dim` in this order.
  // Read and write such an entry through checkpoint_value / assign_checkpoint_value.
  std::vector<at::Tensor> parts;
  std::int64_t parts_dim = 0;
  // Set when the checkpoint's layout differs from the live one by more than a concatenation
  // (Llama 4's experts stored [experts, in, out], its rotary pairs interleaved): `to_checkpoint`
  // maps the live value (the tensor, or the parts concatenated) to what the checkpoint holds,
  // `from_checkpoint` maps it back. Both must be exact (copies, transposes, permutations).
  std::function<at::Tensor(const at::Tensor&)> to_checkpoint, from_checkpoint;
};

// cap * tanh(x / cap) (Gemma 2's soft-capped attention scores and logits); `x` itself when cap <= 0.
// Everything that computes a model's logits applies the same one (ModelOutput::final_logit_softcap).
at::Tensor soft_cap(const at::Tensor& x, double cap);

// The tensor a checkpoint holds under `t.name`: the live parameter, or the parts concatenated (a
// copy, made only when asked for, so listing a model's names and shapes allocates nothing).
at::Tensor checkpoint_value(const NamedTensor& t);
std::vector<std::int64_t> checkpoint_shape(const NamedTensor& t);
// Copies `value` (checkpoint_shape(t), any dtype and device) into the live parameter or parts.
void assign_checkpoint_value(const NamedTensor& t, const at::Tensor& value);

// The optional roles a model may play besides the core below, each an interface of its own
// (ft/model_sharding.h, ft/model_layer_checkpointing.h, ft/model_tensor_parallelism.h,
// ft/model_kv_cache.h, ft/model_expert_parallelism.h), found through Model::find_role. A new role is a new interface
// and id: models built before it answer nullptr for it, so adding one is a minor ABI bump.
enum class ModelRole : std::uint32_t {
  Sharding = 1,            // sharding units and hooks for FSDP / DDP, custom_sharded_layers
  LayerCheckpointing = 2,  // activation checkpointing and offloading, layer by layer
  TensorParallelism = 3,   // splitting modules across a tensor-parallel group
  KvCache = 4,             // key/value caches for generation
  ExpertParallelism = 5,   // splitting mixture-of-experts layers' experts across ranks
  ContextParallelism = 6,  // splitting each sequence across ranks (ring attention)
};

class Model {
 public:
  static constexpr Kind kind = Kind::Model;
  struct Args {
    c10::ScalarType dtype = c10::ScalarType::Float;
    c10::Device device = c10::Device(c10::DeviceType::CPU);
    std::uint64_t seed = 0;  // random initialisation before any checkpoint is loaded
    // The registry building the model (Registry::instantiate sets it): a component that hands its
    // table on to a family's, as fthost.models.from_hf_config does, looks the family up here.
    const Registry* registry = nullptr;
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
  // Hugging Face names of tensors this model does not train but a saved checkpoint must carry
  // unchanged (Llama 4's vision tower when only its language model is finetuned): the
  // checkpointer keeps them as loaded and writes them back bit for bit.
  virtual bool carried_hf_name(const std::string& name) const {
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
  // The longest sequence the model takes (its max_seq_len); 0: no limit is known.
  virtual std::int64_t max_seq_len() const { return 0; }
  // Whether forward() honours ModelInput::document_lengths (packed documents without an [s, s]
  // mask); the host gives any other model the block-causal mask (ft::block_causal_mask).
  virtual bool attends_within_documents() const { return false; }

  // The interface of `role` this model implements (cast to it), or nullptr. Use ft::role_of.
  virtual void* find_role(ModelRole role) {
    (void)role;
    return nullptr;
  }
};

// The model's `Role` interface (ft::ModelSharding, ...), or nullptr when it does not play it.
template <class Role>
Role* role_of(Model& model) {
  return static_cast<Role*>(model.find_role(Role::role));
}

}  // namespace ft
