// The Llama-family decoder as torch modules. Parameter names follow torchtune's modules
// (tok_embeddings, layers.N.attn.q_proj, layers.N.mlp.w1, norm, output) so optimizer state and
// logs read like torchtune's; the model maps them to Hugging Face names for checkpoints.
#pragma once

#include "decoder_config.h"
#include "kv_cache.h"

#include <ATen/core/Tensor.h>
#include <ft/model.h>
#include <ft/tensor_parallel.h>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <optional>
#include <vector>

namespace ft_llama {

class ProjectionImpl : public torch::nn::Module {
 public:
  ProjectionImpl(std::int64_t in_features, std::int64_t out_features, bool bias);
  at::Tensor forward(const at::Tensor& x) const;
  at::Tensor weight;  // [out, in]
  at::Tensor bias;    // [out] or undefined
  // Rowwise tensor parallelism: `weight` holds a slice of the input features and the partial
  // outputs are summed over this group (before the bias). nullptr: the projection is whole.
  std::shared_ptr<ft::Collectives> sums_output_over;
};
TORCH_MODULE(Projection);

class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(std::int64_t dim, double eps);
  at::Tensor forward(const at::Tensor& x) const;
  at::Tensor scale;
  double eps;
};
TORCH_MODULE(RMSNorm);

class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(const DecoderConfig& cfg, at::Tensor inverse_frequencies);
  // mask: [s, s] (shared by the batch) or [b, s, s] bool, true = may attend; undefined: causal
  // (attention then takes LibTorch's fused causal kernels with no mask tensor).
  at::Tensor forward(const at::Tensor& x, const at::Tensor& positions, const at::Tensor& mask) const;
  Projection q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, output_proj{nullptr};
  // Tensor parallelism (prepare_mha_for_tp): this rank computes only these heads.
  void use_local_heads(std::int64_t num_heads, std::int64_t num_kv_heads) {
    num_heads_ = num_heads;
    num_kv_heads_ = num_kv_heads;
  }
  // Set for generation (Model::setup_caches): forward attends over the cached positions.
  std::shared_ptr<KVCache> kv_cache;

 private:
  std::int64_t num_heads_, num_kv_heads_, head_dim_;
  at::Tensor inverse_frequencies_;
};
TORCH_MODULE(Attention);

class FeedForwardImpl : public torch::nn::Module {
 public:
  FeedForwardImpl(std::int64_t dim, std::int64_t hidden_dim);
  at::Tensor forward(const at::Tensor& x) const;
  Projection w1{nullptr}, w2{nullptr}, w3{nullptr};  // gate, down, up
};
TORCH_MODULE(FeedForward);

class DecoderLayerImpl : public torch::nn::Module {
 public:
  DecoderLayerImpl(const DecoderConfig& cfg, at::Tensor inverse_frequencies);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& positions, const at::Tensor& mask) const;
  RMSNorm sa_norm{nullptr};
  Attention attn{nullptr};
  RMSNorm mlp_norm{nullptr};
  FeedForward mlp{nullptr};
  // Tensor parallelism: the group attention / the MLP is split over (their input's gradient is
  // summed over it in backward); nullptr: whole on this rank.
  std::shared_ptr<ft::Collectives> attn_split_over, mlp_split_over;
};
TORCH_MODULE(DecoderLayer);

class TransformerDecoderImpl : public torch::nn::Module {
 public:
  explicit TransformerDecoderImpl(const DecoderConfig& cfg);
  // The final hidden state [b, s, dim], after the last norm.
  at::Tensor hidden(const at::Tensor& tokens, const at::Tensor& positions, const at::Tensor& mask) const;
  // The [vocab, dim] output projection: the embedding itself when tied. Tells the unit hooks
  // of a separately sharded output projection that its parameters are about to be used.
  const at::Tensor& output_weight() const;

  DecoderConfig config;
  at::Tensor tok_embeddings;  // [vocab, dim], registered as tok_embeddings.weight
  std::vector<DecoderLayer> layers;
  RMSNorm norm{nullptr};
  at::Tensor output;                    // [vocab, dim] (output.weight); undefined when tied
  ft::UnitHooks* unit_hooks = nullptr;  // around each layer's forward (sharded data parallelism)
  // One flag per layer: run that layer through ft::checkpointed. Empty: none.
  std::vector<bool> checkpointed_layers;
  // Their saved inputs wait for backward in host memory (activation offloading, CUDA).
  bool offload_checkpointed_inputs = false;
  // Unit indices of the embedding and of the output projection when they are sharding units of
  // their own (custom_sharded_layers); nullopt: they belong to the root unit.
  std::optional<std::size_t> embedding_unit;
  std::optional<std::size_t> output_unit;
  // Tensor parallelism: the embedding's rows are this slice of the vocabulary (the output
  // projection's slice is the model's concern: llama_model.cpp).
  std::optional<ft::VocabShard> embedding_vocab_shard;

 private:
  torch::nn::ModuleList layer_list_;
  at::Tensor inverse_frequencies_;
};
TORCH_MODULE(TransformerDecoder);

// Fills every parameter from a seeded generator: N(0, 0.02) for embeddings and projections,
// scaled by 1/sqrt(2 * num_layers) for the projections that feed the residual stream, ones for
// norms, zeros for biases.
void initialize_weights(TransformerDecoderImpl& model, std::uint64_t seed);

}  // namespace ft_llama
