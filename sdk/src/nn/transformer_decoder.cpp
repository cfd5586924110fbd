#include <ft/nn/transformer_decoder.h>

#include <ft/activation_checkpointing.h>
#include <ft/nn/rotary_embedding.h>
#include <ft/nn/tensor_parallel_ops.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <cmath>

namespace ft::nn {

TransformerDecoderImpl::TransformerDecoderImpl(const DecoderConfig& cfg) : config(cfg) {
  inverse_frequencies_ = rope_inverse_frequencies(cfg.resolved_head_dim(), cfg.rope_base, cfg.rope_scaling);
  auto embedding = register_module("tok_embeddings", std::make_shared<torch::nn::Module>());
  tok_embeddings = embedding->register_parameter("weight", at::empty({cfg.vocab_size, cfg.embed_dim}));
  layer_list_ = register_module("layers", torch::nn::ModuleList());
  for (std::int64_t i = 0; i < cfg.num_layers; ++i) {
    layers.emplace_back(cfg, i, inverse_frequencies_);
    layer_list_->push_back(layers.back());
  }
  norm = register_module("norm", RMSNorm(cfg.embed_dim, cfg.norm_eps, cfg.norm_adds_one));
  if (!cfg.tie_word_embeddings) {
    auto projection = register_module("output", std::make_shared<torch::nn::Module>());
    output = projection->register_parameter("weight", at::empty({cfg.vocab_size, cfg.embed_dim}));
  }
}

at::Tensor TransformerDecoderImpl::hidden(const at::Tensor& tokens, const at::Tensor& positions,
                                          const at::Tensor& mask) const {
  if (unit_hooks && embedding_unit) unit_hooks->before_forward(*embedding_unit);
  at::Tensor h = embedding_vocab_shard ? vocab_parallel_embedding(tok_embeddings, tokens, *embedding_vocab_shard)
                                       : at::embedding(tok_embeddings, tokens);
  if (config.scale_embeddings) {
    // Gemma multiplies by sqrt(dim) as a tensor of the hidden dtype: the factor is rounded first.
    const double normalizer = at::scalar_tensor(std::sqrt(static_cast<double>(config.embed_dim)), at::kDouble)
                                  .to(h.scalar_type())
                                  .item<double>();
    h = h * normalizer;
  }
  if (unit_hooks && embedding_unit) h = unit_hooks->after_forward(*embedding_unit, std::move(h));
  // An undefined mask means causal (attention's fused kernels need no mask tensor for it).
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (unit_hooks) unit_hooks->before_forward(i);
    // Inside the unit hooks: a sharding strategy gathers the layer before its backward starts,
    // so the parameters are whole again when the checkpointed layer is recomputed.
    if (i < checkpointed_layers.size() && checkpointed_layers[i]) {
      const TransformerLayer layer = layers[i];
      h = ft::checkpointed([layer, positions, mask](const at::Tensor& x) { return layer->forward(x, positions, mask); },
                           h, ft::CheckpointOptions{offload_checkpointed_inputs});
    } else {
      h = layers[i]->forward(h, positions, mask);
    }
    if (unit_hooks) h = unit_hooks->after_forward(i, std::move(h));
  }
  return norm->forward(h);
}

const at::Tensor& TransformerDecoderImpl::output_weight() const {
  if (unit_hooks && output_unit) unit_hooks->before_forward(*output_unit);
  return config.tie_word_embeddings ? tok_embeddings : output;
}

void initialize_weights(TransformerDecoderImpl& model, std::uint64_t seed) {
  at::NoGradGuard no_grad;
  at::Generator gen = at::detail::createCPUGenerator(seed);
  constexpr double kStd = 0.02;
  const double residual_std = kStd / std::sqrt(2.0 * static_cast<double>(model.config.num_layers));
  auto fill = [&](at::Tensor& t, double std) {
    if (t.device().is_cpu()) {
      t.normal_(0.0, std, gen);
    } else {
      t.copy_(at::empty(t.sizes(), t.options().device(at::kCPU)).normal_(0.0, std, gen));
    }
  };
  fill(model.tok_embeddings, kStd);
  for (auto& layer : model.layers) {
    fill(layer->attn->q_proj->weight, kStd);
    fill(layer->attn->k_proj->weight, kStd);
    fill(layer->attn->v_proj->weight, kStd);
    fill(layer->attn->output_proj->weight, residual_std);
    fill(layer->mlp->w1->weight, kStd);
    fill(layer->mlp->w3->weight, kStd);
    fill(layer->mlp->w2->weight, residual_std);
  }
  if (model.output.defined()) fill(model.output, kStd);
}

}  // namespace ft::nn
