#include <ft/model.h>
#include <ft/nn/attention.h>
#include <ft/nn/rotary_embedding.h>

#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <map>
#include <optional>

namespace ft::nn {

AttentionImpl::AttentionImpl(const DecoderConfig& cfg, std::int64_t layer, at::Tensor inverse_frequencies)
    : num_heads_(cfg.num_heads),
      num_kv_heads_(cfg.num_kv_heads),
      head_dim_(cfg.resolved_head_dim()),
      scores_{cfg.attention_scale(), cfg.attn_logit_softcap, cfg.layer_sliding_window(layer)},
      inverse_frequencies_(std::move(inverse_frequencies)) {
  q_proj = register_module("q_proj", Linear(cfg.embed_dim, num_heads_ * head_dim_, cfg.qkv_bias));
  k_proj = register_module("k_proj", Linear(cfg.embed_dim, num_kv_heads_ * head_dim_, cfg.qkv_bias));
  v_proj = register_module("v_proj", Linear(cfg.embed_dim, num_kv_heads_ * head_dim_, cfg.qkv_bias));
  output_proj = register_module("output_proj", Linear(num_heads_ * head_dim_, cfg.embed_dim, false));
  if (cfg.qk_norm) {
    q_norm = register_module("q_norm", RMSNorm(head_dim_, cfg.norm_eps, cfg.norm_adds_one));
    k_norm = register_module("k_norm", RMSNorm(head_dim_, cfg.norm_eps, cfg.norm_adds_one));
  }
  default_scale_ = cfg.query_pre_attn_scalar <= 0;
}

at::Tensor AttentionImpl::forward(const at::Tensor& x, const at::Tensor& positions, const at::Tensor& mask) const {
  const std::int64_t b = x.size(0), s = x.size(1);
  at::Tensor q = q_proj->forward(x).view({b, s, num_heads_, head_dim_});
  at::Tensor k = k_proj->forward(x).view({b, s, num_kv_heads_, head_dim_});
  if (q_norm) {
    q = q_norm->forward(q);
    k = k_norm->forward(k);
  }
  q = apply_rotary_embedding(q, positions, inverse_frequencies_);
  k = apply_rotary_embedding(k, positions, inverse_frequencies_);
  at::Tensor v = v_proj->forward(x).view({b, s, num_kv_heads_, head_dim_});
  if (kv_cache) return output_proj->forward(kv_cache->attend(q, k, v, positions, scores_));
  q = q.transpose(1, 2);
  k = k.transpose(1, 2);
  v = v.transpose(1, 2);
  at::Tensor out;
  if (scores_.softcap > 0) {
    at::Tensor allowed = sliding_window_mask(mask, s, scores_.sliding_window, x.options());
    out = explicit_attention(q, k, v, allowed.dim() == 3 ? allowed.unsqueeze(1) : allowed, scores_);
  } else {
    // LibTorch's fused attention on every device: flash, cuDNN or memory-efficient kernels on
    // CUDA, the flash kernel on the CPU, where it beat fthost's matmul + fused masked softmax
    // path at every benchmark shape (bench/attention_cpu.cpp, docs/performance.md). The [s, s]
    // scores never exist in memory, and a causal mask is no tensor at all.
    std::optional<at::Tensor> mask_4d;  // nullopt, not an undefined tensor: LibTorch checks a given mask's dtype
    if (scores_.sliding_window > 0) {
      mask_4d = sliding_window_mask(mask, s, scores_.sliding_window, x.options());
    } else if (mask.defined()) {
      mask_4d = mask;
    }
    if (mask_4d && mask_4d->dim() == 3) mask_4d = mask_4d->unsqueeze(1);
    out = at::scaled_dot_product_attention(q, k, v, mask_4d, 0.0, /*is_causal=*/!mask_4d.has_value(),
                                           default_scale_ ? std::nullopt : std::optional<double>(scores_.scale),
                                           /*enable_gqa=*/num_heads_ != num_kv_heads_);
  }
  return output_proj->forward(out.transpose(1, 2).reshape({b, s, num_heads_ * head_dim_}));
}

at::Tensor explicit_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& allowed,
                              const AttentionScores& scores) {
  const std::int64_t group = q.size(1) / k.size(1);
  const at::Tensor keys = group > 1 ? k.repeat_interleave(group, 1) : k;
  const at::Tensor values = group > 1 ? v.repeat_interleave(group, 1) : v;
  at::Tensor weights = at::matmul(q, keys.transpose(-1, -2)) * scores.scale;
  weights = ft::soft_cap(weights, scores.softcap);
  weights = weights.masked_fill(allowed.logical_not(), -std::numeric_limits<float>::infinity());
  const at::Tensor probs = at::softmax(weights, -1, at::kFloat).to(q.scalar_type());
  return at::matmul(probs, values);
}

namespace {

at::Tensor causal_band(std::int64_t seq_len, std::int64_t window, const at::TensorOptions& device) {
  const at::Tensor index = at::arange(seq_len, device.dtype(at::kLong));
  const at::Tensor query = index.unsqueeze(1), key = index.unsqueeze(0);
  at::Tensor band = key <= query;
  if (window > 0) band = band.logical_and(query - key < window);
  return band;
}

// Every layer of one forward (and a checkpointed layer's recompute) asks for the same bands: built
// once per sequence length, window and device, not once per layer. Read-only once built.
const at::Tensor& shared_causal_band(std::int64_t seq_len, std::int64_t window, const at::TensorOptions& device) {
  struct Bands {
    std::int64_t seq_len = -1;
    c10::Device device = c10::Device(c10::DeviceType::CPU);
    std::map<std::int64_t, at::Tensor> by_window;  // Gemma 2 alternates two windows
  };
  thread_local Bands bands;
  if (bands.seq_len != seq_len || bands.device != device.device()) bands = Bands{seq_len, device.device(), {}};
  at::Tensor& band = bands.by_window[window];
  if (!band.defined()) band = causal_band(seq_len, window, device);
  return band;
}

}  // namespace

at::Tensor sliding_window_mask(const at::Tensor& mask, std::int64_t seq_len, std::int64_t window,
                               const at::TensorOptions& device) {
  const at::Tensor& band = shared_causal_band(seq_len, window, device);
  return mask.defined() ? mask.logical_and(band) : band;
}

}  // namespace ft::nn
