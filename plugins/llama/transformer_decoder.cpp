#include "transformer_decoder.h"

#include "rotary_embedding.h"
#include "tensor_parallel_decoder.h"

#include <ft/activation_checkpointing.h>
#include <ft_kernels/fused_ops.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>
#include <torch/nn/modules/container/any.h>

#include <cmath>
#include <limits>
#include <optional>

namespace ft_llama {

ProjectionImpl::ProjectionImpl(std::int64_t in_features, std::int64_t out_features, bool with_bias) {
  weight = register_parameter("weight", at::empty({out_features, in_features}));
  if (with_bias) bias = register_parameter("bias", at::zeros({out_features}));
}

at::Tensor ProjectionImpl::forward(const at::Tensor& x) const {
  if (sums_output_over) return rowwise_parallel_linear(x, weight, bias, sums_output_over);
  return at::linear(x, weight, bias);
}

RMSNormImpl::RMSNormImpl(std::int64_t dim, double eps_) : eps(eps_) {
  scale = register_parameter("scale", at::ones({dim}));
}

at::Tensor RMSNormImpl::forward(const at::Tensor& x) const { return ft_kernels::rms_norm(x, scale, eps); }

AttentionImpl::AttentionImpl(const DecoderConfig& cfg, at::Tensor inverse_frequencies)
    : num_heads_(cfg.num_heads),
      num_kv_heads_(cfg.num_kv_heads),
      head_dim_(cfg.resolved_head_dim()),
      inverse_frequencies_(std::move(inverse_frequencies)) {
  q_proj = register_module("q_proj", Projection(cfg.embed_dim, num_heads_ * head_dim_, cfg.qkv_bias));
  k_proj = register_module("k_proj", Projection(cfg.embed_dim, num_kv_heads_ * head_dim_, cfg.qkv_bias));
  v_proj = register_module("v_proj", Projection(cfg.embed_dim, num_kv_heads_ * head_dim_, cfg.qkv_bias));
  output_proj = register_module("output_proj", Projection(num_heads_ * head_dim_, cfg.embed_dim, false));
}

at::Tensor AttentionImpl::forward(const at::Tensor& x, const at::Tensor& positions, const at::Tensor& mask) const {
  const std::int64_t b = x.size(0), s = x.size(1);
  at::Tensor q =
      apply_rotary_embedding(q_proj->forward(x).view({b, s, num_heads_, head_dim_}), positions, inverse_frequencies_);
  at::Tensor k = apply_rotary_embedding(k_proj->forward(x).view({b, s, num_kv_heads_, head_dim_}), positions,
                                        inverse_frequencies_);
  at::Tensor v = v_proj->forward(x).view({b, s, num_kv_heads_, head_dim_});
  if (kv_cache) return output_proj->forward(kv_cache->attend(q, k, v, positions));
  // LibTorch's fused attention on every device: flash, cuDNN or memory-efficient kernels on CUDA,
  // the flash kernel on the CPU, where it beat fthost's matmul + fused masked softmax path at every
  // benchmark shape (bench/attention_cpu.cpp, docs/performance.md). The [s, s] scores never exist
  // in memory, and a causal mask is no tensor at all.
  std::optional<at::Tensor> mask_4d;  // nullopt, not an undefined tensor: LibTorch checks a given mask's dtype
  if (mask.defined()) mask_4d = mask.dim() == 2 ? mask : mask.unsqueeze(1);
  at::Tensor out = at::scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), mask_4d,
                                                    0.0, /*is_causal=*/!mask.defined(), std::nullopt,
                                                    /*enable_gqa=*/num_heads_ != num_kv_heads_);
  return output_proj->forward(out.transpose(1, 2).reshape({b, s, num_heads_ * head_dim_}));
}

FeedForwardImpl::FeedForwardImpl(std::int64_t dim, std::int64_t hidden_dim) {
  w1 = register_module("w1", Projection(dim, hidden_dim, false));
  w2 = register_module("w2", Projection(hidden_dim, dim, false));
  w3 = register_module("w3", Projection(dim, hidden_dim, false));
}

at::Tensor FeedForwardImpl::forward(const at::Tensor& x) const {
  return w2->forward(ft_kernels::swiglu(w1->forward(x), w3->forward(x)));
}

DecoderLayerImpl::DecoderLayerImpl(const DecoderConfig& cfg, at::Tensor inverse_frequencies) {
  sa_norm = register_module("sa_norm", RMSNorm(cfg.embed_dim, cfg.norm_eps));
  attn = register_module("attn", Attention(cfg, std::move(inverse_frequencies)));
  mlp_norm = register_module("mlp_norm", RMSNorm(cfg.embed_dim, cfg.norm_eps));
  mlp = register_module("mlp", FeedForward(cfg.embed_dim, cfg.intermediate_dim));
}

at::Tensor DecoderLayerImpl::forward(const at::Tensor& x, const at::Tensor& positions, const at::Tensor& mask) const {
  at::Tensor h = x + attn->forward(colwise_parallel_input(sa_norm->forward(x), attn_split_over), positions, mask);
  return h + mlp->forward(colwise_parallel_input(mlp_norm->forward(h), mlp_split_over));
}

TransformerDecoderImpl::TransformerDecoderImpl(const DecoderConfig& cfg) : config(cfg) {
  inverse_frequencies_ = rope_inverse_frequencies(cfg.resolved_head_dim(), cfg.rope_base, cfg.rope_scaling);
  auto embedding = register_module("tok_embeddings", std::make_shared<torch::nn::Module>());
  tok_embeddings = embedding->register_parameter("weight", at::empty({cfg.vocab_size, cfg.embed_dim}));
  layer_list_ = register_module("layers", torch::nn::ModuleList());
  for (std::int64_t i = 0; i < cfg.num_layers; ++i) {
    layers.emplace_back(cfg, inverse_frequencies_);
    layer_list_->push_back(layers.back());
  }
  norm = register_module("norm", RMSNorm(cfg.embed_dim, cfg.norm_eps));
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
  if (unit_hooks && embedding_unit) h = unit_hooks->after_forward(*embedding_unit, std::move(h));
  // An undefined mask means causal (attention's fused kernels need no mask tensor for it).
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (unit_hooks) unit_hooks->before_forward(i);
    // Inside the unit hooks: a sharding strategy gathers the layer before its backward starts,
    // so the parameters are whole again when the checkpointed layer is recomputed.
    if (i < checkpointed_layers.size() && checkpointed_layers[i]) {
      const DecoderLayer layer = layers[i];
      h = ft::checkpointed(
          [layer, positions, mask](const at::Tensor& x) { return layer->forward(x, positions, mask); }, h,
          ft::CheckpointOptions{offload_checkpointed_inputs});
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

}  // namespace ft_llama
