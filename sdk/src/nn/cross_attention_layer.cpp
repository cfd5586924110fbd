#include <ft/nn/cross_attention_layer.h>

#include <ft/errors.h>

#include <utility>

namespace ft::nn {

CrossAttentionLayerImpl::CrossAttentionLayerImpl(CrossAttentionLayerParts parts) {
  if (!parts.ca_norm || !parts.attn || !parts.mlp_norm || !parts.mlp)
    throw ft::Error("cross-attention layer: ca_norm, attn, mlp_norm and mlp are required");
  // Registered in this order: parameter order (optimizer state, checkpoints) follows it.
  ca_norm = register_module("ca_norm", std::move(parts.ca_norm));
  attn = register_module("attn", parts.attn);
  if (parts.ca_scale) ca_scale = register_module("ca_scale", std::move(parts.ca_scale));
  mlp_norm = register_module("mlp_norm", std::move(parts.mlp_norm));
  mlp = register_module("mlp", std::move(parts.mlp));
  if (parts.mlp_scale) mlp_scale = register_module("mlp_scale", std::move(parts.mlp_scale));
}

at::Tensor CrossAttentionLayerImpl::forward(const at::Tensor& x, const at::Tensor& encoder,
                                            const at::Tensor& allowed) const {
  if (!encoder.defined()) return x;
  at::Tensor attended = attn->forward(ca_norm->forward(x), encoder, allowed);
  if (ca_scale) attended = ca_scale->forward(attended);
  const at::Tensor h = x + attended;
  at::Tensor transformed = mlp->forward(mlp_norm->forward(h)) * rows_with_any_key(allowed, h.scalar_type());
  if (mlp_scale) transformed = mlp_scale->forward(transformed);
  return h + transformed;
}

}  // namespace ft::nn
