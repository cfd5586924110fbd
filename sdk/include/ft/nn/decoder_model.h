// ft::Model for any decoder a family's builder composed from ft::nn blocks: forward, sharding
// units, separately sharded modules, activation checkpointing, tensor, expert and context
// parallelism and the KV cache, once for every family. A family derives from it only for what differs: its Hugging Face
// config.json (and, where its checkpoints name parameters unlike LlamaForCausalLM's,
// hf_parameters()).
#pragma once

#include <ft/model.h>
#include <ft/model_context_parallelism.h>
#include <ft/model_expert_parallelism.h>
#include <ft/model_kv_cache.h>
#include <ft/model_layer_checkpointing.h>
#include <ft/model_sharding.h>
#include <ft/model_tensor_parallelism.h>
#include <ft/nn/hf_parameter_names.h>
#include <ft/nn/tensor_parallel_decoder.h>
#include <ft/nn/transformer_decoder.h>

#include <functional>
#include <memory>
#include <optional>

namespace ft::nn {

class DecoderModel : public ft::Model,
                     public ft::ModelSharding,
                     public ft::ModelLayerCheckpointing,
                     public ft::ModelTensorParallelism,
                     public ft::ModelExpertParallelism,
                     public ft::ModelContextParallelism,
                     public ft::ModelKvCache {
 public:
  // `build` composes the decoder; it runs with parameters on the meta device when args.device is
  // meta (a model of any size built from its shapes: no weight allocated, none initialised).
  using BuildDecoder = std::function<TransformerDecoder()>;
  DecoderModel(const BuildDecoder& build, const ft::Model::Args& args, HfLayout layout = {});

  torch::nn::Module& module() override { return *decoder_; }
  ft::ModelOutput forward(const ft::ModelInput& input, const ft::OutputRequest& request) override;
  at::Tensor output_weight() override { return decoder_->output_weight(); }
  std::vector<ft::NamedTensor> hf_parameters() override { return hf_parameter_names(*decoder_, layout_); }
  bool ignorable_hf_name(const std::string& name) const override;
  std::int64_t vocab_size() const override { return decoder_->options.vocab_size; }
  double training_flops_per_position(std::int64_t seq_len) const override;
  std::int64_t max_seq_len() const override { return decoder_->options.max_seq_len; }
  bool attends_within_documents() const override { return true; }
  void* find_role(ft::ModelRole role) override;

  std::vector<ft::ShardingUnit> sharding_units() override;
  void set_unit_hooks(ft::UnitHooks* hooks) override { decoder_->unit_hooks = hooks; }
  std::int64_t num_checkpointable_layers() const override { return static_cast<std::int64_t>(decoder_->layers.size()); }
  void set_activation_checkpointing(const std::vector<bool>& layers) override;
  void set_activation_offloading(bool offload) override { decoder_->offload_checkpointed_inputs = offload; }
  std::vector<std::string> shard_separately(const std::vector<std::string>& module_names) override;
  void apply_tensor_parallel(const std::vector<ft::ModuleParallelism>& plan,
                             const std::shared_ptr<ft::Collectives>& group) override;
  std::vector<at::Tensor> tensor_parallel_shards() override;
  void with_full_tensor_parallel_parameters(const std::function<void()>& fn) override;
  bool has_experts() const override { return has_experts_; }
  std::int64_t experts_per_layer() const override;
  void apply_expert_parallel(const std::shared_ptr<ft::Collectives>& group) override;
  std::shared_ptr<ft::Collectives> expert_parallel_group() const override;
  std::vector<at::Tensor> expert_parallel_shards() override;
  void with_full_expert_parallel_parameters(const std::function<void()>& fn) override;
  std::string context_parallel_problem() const override;
  void apply_context_parallel(const std::shared_ptr<ft::Collectives>& group, ft::RotateMethod rotate) override;
  void setup_caches(std::int64_t batch_size, std::int64_t max_seq_len) override;
  void reset_caches() override;
  void remove_caches() override;

  TransformerDecoderImpl& decoder() { return *decoder_; }
  const TransformerDecoderImpl& decoder() const { return *decoder_; }

 protected:
  c10::ScalarType dtype() const { return dtype_; }

 private:
  // A mixture of experts' routing of the forward that just ran: expert load, auxiliary loss.
  void collect_routing(ft::ModelOutput& out) const;

  TransformerDecoder decoder_{nullptr};
  c10::ScalarType dtype_;
  HfLayout layout_;
  // From the whole model, before any tensor-parallel split (training_flops_per_position).
  double matmul_parameters_ = 0;
  double attention_width_ = 0;       // sum over layers of heads x head_dim
  bool has_experts_ = false;         // some layer is a mixture of experts
  bool separate_embedding_ = false;  // custom_sharded_layers: tok_embeddings
  bool separate_output_ = false;     // custom_sharded_layers: output (untied models)
  std::optional<DecoderSplits> tensor_parallel_;
  std::optional<DecoderSplits> expert_parallel_;
  bool caches_set_up_ = false;  // generation: forward() reads and writes the KV caches
  bool context_parallel_ = false;
};

// Hugging Face's name for a dtype in config.json's torch_dtype.
std::string hf_dtype_name(c10::ScalarType dtype);

}  // namespace ft::nn
