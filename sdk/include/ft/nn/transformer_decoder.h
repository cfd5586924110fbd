// The decoder as torch modules: embedding, the layers and final norm the family's builder composed,
// output projection. Parameter names follow torchtune's modules (tok_embeddings,
// layers.N.attn.q_proj, layers.N.mlp.w1, norm, output) so optimizer state and logs read like
// torchtune's; a family maps them to Hugging Face names.
// It owns, once for every family, what a strategy drives: the unit hooks around each sharding
// unit, per-layer activation checkpointing and offloading, and the vocabulary-parallel embedding.
#pragma once

#include <ft/model_sharding.h>
#include <ft/nn/attention_mask.h>
#include <ft/nn/norm.h>
#include <ft/nn/transformer_layer.h>
#include <ft/tensor_parallel.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace ft::nn {

// What the decoder itself holds besides its layers and final norm.
struct DecoderOptions {
  std::int64_t vocab_size = 0;
  std::int64_t embed_dim = 0;
  std::int64_t max_seq_len = 0;  // the longest sequence forward accepts
  bool tie_word_embeddings = false;
  // Embeddings times sqrt(embed_dim), the factor rounded to the hidden dtype first (Gemma).
  bool scale_embeddings = false;
  double final_logit_softcap = 0;  // logits -> cap * tanh(logits / cap); 0: none (Gemma 2)
  // Mixture-of-experts layers: the weight of the load-balancing loss added to the objective
  // (Hugging Face's router_aux_loss_coef when output_router_logits is set); 0: none.
  double router_aux_loss_coef = 0;
};

class TransformerDecoderImpl : public torch::nn::Module {
 public:
  TransformerDecoderImpl(const DecoderOptions& options, std::vector<TransformerLayer> layers, Norm norm);
  // The final hidden state [b, s, dim], after the last norm.
  at::Tensor hidden(const at::Tensor& tokens, const at::Tensor& positions, const at::Tensor& mask,
                    const DocumentLengths& documents = {}) const;
  // The [vocab, dim] output projection: the embedding itself when tied. Tells the unit hooks
  // of a separately sharded output projection that its parameters are about to be used.
  const at::Tensor& output_weight() const;

  DecoderOptions options;
  at::Tensor tok_embeddings;  // [vocab, dim], registered as tok_embeddings.weight
  std::vector<TransformerLayer> layers;
  Norm norm;
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
  // projection's slice is the model's concern: decoder_model.cpp).
  std::optional<ft::VocabShard> embedding_vocab_shard;
  // Early fusion (Llama 4 with images): maps the token embeddings [b, s, dim] to those the first
  // layer reads (image features in place of their placeholder tokens'). Unset: none.
  std::function<at::Tensor(const at::Tensor&)> fuse_embeddings;

 private:
  torch::nn::ModuleList layer_list_;
};
TORCH_MODULE(TransformerDecoder);

// Fills every parameter from a seeded generator: N(0, 0.02) for embeddings and projections,
// scaled by 1/sqrt(2 * num_layers) for the projections that feed the residual stream; norms and
// biases keep their construction values (their identity, zeros).
void initialize_weights(TransformerDecoderImpl& model, std::uint64_t seed);

}  // namespace ft::nn
