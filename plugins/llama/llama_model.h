// ft::Model for the Llama family: the decoder plus its Hugging Face naming and config.json.
#pragma once

#include "decoder_config.h"
#include "tensor_parallel_decoder.h"
#include "transformer_decoder.h"

#include <ft/model.h>

#include <memory>
#include <optional>

namespace ft_llama {

class LlamaFamilyModel final : public ft::Model {
 public:
  LlamaFamilyModel(const DecoderConfig& config, const ft::Model::Args& args);

  torch::nn::Module& module() override { return *decoder_; }
  ft::ModelOutput forward(const ft::ModelInput& input, const ft::OutputRequest& request) override;
  at::Tensor output_weight() override { return decoder_->output_weight(); }
  std::vector<ft::NamedTensor> hf_parameters() override;
  bool ignorable_hf_name(const std::string& name) const override;
  std::string hf_config_json() const override;
  std::int64_t vocab_size() const override { return decoder_->config.vocab_size; }
  double training_flops_per_position(std::int64_t seq_len) const override;
  std::vector<ft::ShardingUnit> sharding_units() override;
  void set_unit_hooks(ft::UnitHooks* hooks) override { decoder_->unit_hooks = hooks; }
  std::int64_t num_checkpointable_layers() const override { return decoder_->config.num_layers; }
  void set_activation_checkpointing(const std::vector<bool>& layers) override;
  void set_activation_offloading(bool offload) override { decoder_->offload_checkpointed_inputs = offload; }
  std::vector<std::string> shard_separately(const std::vector<std::string>& module_names) override;
  void apply_tensor_parallel(const std::vector<ft::ModuleParallelism>& plan,
                             const std::shared_ptr<ft::Collectives>& group) override;
  std::vector<at::Tensor> tensor_parallel_shards() override;
  void with_full_tensor_parallel_parameters(const std::function<void()>& fn) override;
  std::int64_t max_seq_len() const override { return decoder_->config.max_seq_len; }
  bool supports_kv_cache() const override { return true; }
  void setup_caches(std::int64_t batch_size, std::int64_t max_seq_len) override;
  void reset_caches() override;
  void remove_caches() override;

  const DecoderConfig& config() const { return decoder_->config; }

 private:
  TransformerDecoder decoder_{nullptr};
  c10::ScalarType dtype_;
  bool separate_embedding_ = false;  // custom_sharded_layers: tok_embeddings
  bool separate_output_ = false;     // custom_sharded_layers: output (untied models)
  std::optional<DecoderSplits> tensor_parallel_;
  bool caches_set_up_ = false;  // generation: forward() reads and writes the KV caches
};

}  // namespace ft_llama
