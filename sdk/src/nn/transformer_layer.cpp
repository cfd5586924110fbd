#include <ft/nn/tensor_parallel_ops.h>
#include <ft/nn/transformer_layer.h>

namespace ft::nn {

TransformerLayerImpl::TransformerLayerImpl(const DecoderConfig& cfg, std::int64_t layer,
                                           at::Tensor inverse_frequencies) {
  auto norm = [&] { return RMSNorm(cfg.embed_dim, cfg.norm_eps, cfg.norm_adds_one); };
  sa_norm = register_module("sa_norm", norm());
  attn = register_module("attn", Attention(cfg, layer, std::move(inverse_frequencies)));
  if (cfg.post_norms) sa_scale = register_module("sa_scale", norm());
  mlp_norm = register_module("mlp_norm", norm());
  mlp = register_module("mlp", FeedForward(cfg.embed_dim, cfg.intermediate_dim, cfg.activation));
  if (cfg.post_norms) mlp_scale = register_module("mlp_scale", norm());
}

at::Tensor TransformerLayerImpl::forward(const at::Tensor& x, const at::Tensor& positions,
                                         const at::Tensor& mask) const {
  at::Tensor attended = attn->forward(colwise_parallel_input(sa_norm->forward(x), attn_split_over), positions, mask);
  if (sa_scale) attended = sa_scale->forward(attended);
  const at::Tensor h = x + attended;
  at::Tensor transformed = mlp->forward(colwise_parallel_input(mlp_norm->forward(h), mlp_split_over));
  if (mlp_scale) transformed = mlp_scale->forward(transformed);
  return h + transformed;
}

}  // namespace ft::nn
