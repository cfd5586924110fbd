#include <ft/nn/cross_attention.h>

#include <ft/errors.h>
#include <ft/text.h>

#include <ATen/ATen.h>

#include <optional>
#include <utility>
#include <vector>

namespace ft::nn {

std::string CrossAttentionOptions::problem() const {
  if (embed_dim <= 0 || encoder_dim <= 0 || num_heads <= 0 || num_kv_heads <= 0 || head_dim <= 0)
    return "cross-attention sizes (embed_dim, encoder_dim, num_heads, num_kv_heads, head_dim) must be positive";
  if (num_heads % num_kv_heads != 0)
    return "num_heads (" + std::to_string(num_heads) + ") must be a multiple of num_kv_heads (" +
           std::to_string(num_kv_heads) + ")";
  return {};
}

CrossAttentionImpl::CrossAttentionImpl(const CrossAttentionOptions& options, Norm q_norm_, Norm k_norm_)
    : options_(options) {
  if (std::string problem = options.problem(); !problem.empty()) throw ft::Error("cross-attention: " + problem);
  if (static_cast<bool>(q_norm_) != static_cast<bool>(k_norm_))
    throw ft::Error("cross-attention: a q norm and a k norm go together (both, or neither)");
  const std::int64_t q_width = options.num_heads * options.head_dim;
  const std::int64_t kv_width = options.num_kv_heads * options.head_dim;
  q_proj = register_module("q_proj", Linear(options.embed_dim, q_width, false));
  k_proj = register_module("k_proj", Linear(options.encoder_dim, kv_width, false));
  v_proj = register_module("v_proj", Linear(options.encoder_dim, kv_width, false));
  output_proj = register_module("output_proj", Linear(q_width, options.embed_dim, false));
  if (q_norm_) {
    q_norm = register_module("q_norm", std::move(q_norm_));
    k_norm = register_module("k_norm", std::move(k_norm_));
  }
}

at::Tensor rows_with_any_key(const at::Tensor& allowed, c10::ScalarType dtype) {
  return allowed.any(-1, /*keepdim=*/true).to(dtype);
}

at::Tensor CrossAttentionImpl::forward(const at::Tensor& x, const at::Tensor& encoder,
                                       const at::Tensor& allowed) const {
  const std::int64_t b = x.size(0), s = x.size(1), n = encoder.size(1);
  const std::int64_t heads = options_.num_heads, kv_heads = options_.num_kv_heads, hd = options_.head_dim;
  if (allowed.dim() != 3 || allowed.size(0) != b || allowed.size(1) != s || allowed.size(2) != n)
    throw ft::Error("cross-attention: the mask must be [batch, text, encoder states] = " +
                    ft::shape_text(std::vector<std::int64_t>{b, s, n}) + ", got " + ft::shape_text(allowed.sizes()));
  at::Tensor q = q_proj->forward(x).view({b, s, heads, hd});
  at::Tensor k = k_proj->forward(encoder).view({b, n, kv_heads, hd});
  const at::Tensor v = v_proj->forward(encoder).view({b, n, kv_heads, hd});
  if (q_norm) {
    q = q_norm->forward(q);
    k = k_norm->forward(k);
  }
  // A row that may see nothing attends everywhere and is then zeroed: the softmax stays finite,
  // so neither the output nor any gradient through it becomes NaN.
  const at::Tensor has_key = allowed.any(-1, /*keepdim=*/true);
  const at::Tensor mask = at::logical_or(allowed, has_key.logical_not()).unsqueeze(1);
  at::Tensor out = at::scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                    std::optional<at::Tensor>(mask), 0.0, /*is_causal=*/false,
                                                    std::nullopt, /*enable_gqa=*/heads != kv_heads);
  out = out.transpose(1, 2).reshape({b, s, heads * hd}) * has_key.to(out.scalar_type());
  return output_proj->forward(out);
}

}  // namespace ft::nn
