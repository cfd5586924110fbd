#include <ft/nn/transformer_decoder.h>

#include <ft/activation_checkpointing.h>
#include <ft/errors.h>
#include <ft/nn/parameter_device.h>
#include <ft/nn/tensor_parallel_ops.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <cmath>

namespace ft::nn {

TransformerDecoderImpl::TransformerDecoderImpl(const DecoderOptions& options_, std::vector<TransformerLayer> layers_,
                                               Norm norm_)
    : options(options_), layers(std::move(layers_)) {
  if (options.vocab_size <= 0 || options.embed_dim <= 0 || options.max_seq_len <= 0)
    throw ft::Error("decoder: vocab_size, embed_dim and max_seq_len must be positive");
  if (options.final_logit_softcap < 0)
    throw ft::Error("decoder: the final logit soft cap must be positive (or 0: none)");
  if (!norm_) throw ft::Error("decoder: the final norm is required");
  auto embedding = register_module("tok_embeddings", std::make_shared<torch::nn::Module>());
  tok_embeddings =
      embedding->register_parameter("weight", at::empty({options.vocab_size, options.embed_dim}, parameter_options()));
  layer_list_ = register_module("layers", torch::nn::ModuleList());
  for (const TransformerLayer& layer : layers) layer_list_->push_back(layer);
  norm = register_module("norm", std::move(norm_));
  if (!options.tie_word_embeddings) {
    auto projection = register_module("output", std::make_shared<torch::nn::Module>());
    output = projection->register_parameter("weight",
                                            at::empty({options.vocab_size, options.embed_dim}, parameter_options()));
  }
}

at::Tensor TransformerDecoderImpl::hidden(const at::Tensor& tokens, const at::Tensor& positions, const at::Tensor& mask,
                                          const DocumentLengths& documents) const {
  if (unit_hooks && embedding_unit) unit_hooks->before_forward(*embedding_unit);
  at::Tensor h = embedding_vocab_shard ? vocab_parallel_embedding(tok_embeddings, tokens, *embedding_vocab_shard)
                                       : at::embedding(tok_embeddings, tokens);
  if (options.scale_embeddings) {
    // Gemma multiplies by sqrt(dim) as a tensor of the hidden dtype: the factor is rounded first.
    const double normalizer = at::scalar_tensor(std::sqrt(static_cast<double>(options.embed_dim)), at::kDouble)
                                  .to(h.scalar_type())
                                  .item<double>();
    h = h * normalizer;
  }
  if (unit_hooks && embedding_unit) h = unit_hooks->after_forward(*embedding_unit, std::move(h));
  if (fuse_embeddings) h = fuse_embeddings(h);
  // An undefined mask means causal (attention's fused kernels need no mask tensor for it).
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (unit_hooks) unit_hooks->before_forward(i);
    // Inside the unit hooks: a sharding strategy gathers the layer before its backward starts,
    // so the parameters are whole again when the checkpointed layer is recomputed.
    if (i < checkpointed_layers.size() && checkpointed_layers[i]) {
      const TransformerLayer layer = layers[i];
      const auto run_layer = [layer, positions, mask, documents](const at::Tensor& x) {
        return layer->forward(x, positions, mask, documents);
      };
      h = ft::checkpointed(run_layer, h, ft::CheckpointOptions{offload_checkpointed_inputs});
    } else {
      h = layers[i]->forward(h, positions, mask, documents);
    }
    if (unit_hooks) h = unit_hooks->after_forward(i, std::move(h));
  }
  return norm->forward(h);
}

const at::Tensor& TransformerDecoderImpl::output_weight() const {
  if (unit_hooks && output_unit) unit_hooks->before_forward(*output_unit);
  return options.tie_word_embeddings ? tok_embeddings : output;
}

void initialize_weights(TransformerDecoderImpl& model, std::uint64_t seed) {
  at::NoGradGuard no_grad;
  at::Generator gen = at::detail::createCPUGenerator(seed);
  constexpr double kStd = 0.02;
  const double residual_std = kStd / std::sqrt(2.0 * static_cast<double>(model.layers.size()));
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
    layer->mlp->initialize(fill, kStd, residual_std);
  }
  if (model.output.defined()) fill(model.output, kStd);
}

}  // namespace ft::nn
