#include <ft/nn/tensor_parallel_ops.h>
#include <ft/nn/transformer_layer.h>

#include <ft/errors.h>

namespace ft::nn {

TransformerLayerImpl::TransformerLayerImpl(TransformerLayerParts parts) {
  if (!parts.sa_norm || !parts.attn || !parts.mlp_norm || !parts.mlp)
    throw ft::Error("transformer layer: sa_norm, attn, mlp_norm and mlp are required");
  // Registered in this order: parameter order (optimizer state, checkpoints) follows it.
  sa_norm = register_module("sa_norm", std::move(parts.sa_norm));
  attn = register_module("attn", parts.attn);
  if (parts.sa_scale) sa_scale = register_module("sa_scale", std::move(parts.sa_scale));
  mlp_norm = register_module("mlp_norm", std::move(parts.mlp_norm));
  mlp = register_module("mlp", std::move(parts.mlp));
  if (parts.mlp_scale) mlp_scale = register_module("mlp_scale", std::move(parts.mlp_scale));
}

at::Tensor TransformerLayerImpl::forward(const at::Tensor& x, const at::Tensor& positions, const at::Tensor& mask,
                                         const DocumentLengths& documents) const {
  at::Tensor attended =
      attn->forward(colwise_parallel_input(sa_norm->forward(x), attn_split_over), positions, mask, documents);
  if (sa_scale) attended = sa_scale->forward(attended);
  const at::Tensor h = x + attended;
  at::Tensor transformed = mlp->forward(colwise_parallel_input(mlp_norm->forward(h), mlp_split_over));
  if (mlp_scale) transformed = mlp_scale->forward(transformed);
  return h + transformed;
}

}  // namespace ft::nn
