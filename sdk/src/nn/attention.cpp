#include <ft/nn/attention.h>

#include <ft/errors.h>
#include <ft/model.h>

#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <utility>

namespace ft::nn {

std::string AttentionOptions::problem() const {
  if (embed_dim <= 0 || num_heads <= 0 || num_kv_heads <= 0 || head_dim <= 0)
    return "attention sizes (embed_dim, num_heads, num_kv_heads, head_dim) must be positive";
  if (num_heads % num_kv_heads != 0)
    return "num_heads (" + std::to_string(num_heads) + ") must be a multiple of num_kv_heads (" +
           std::to_string(num_kv_heads) + ")";
  if (query_scale && !(*query_scale > 0)) return "the query scale must be positive";
  if (softcap < 0) return "the attention logit soft cap must be positive (or 0: none)";
  if (query_temperature && !(query_temperature->floor_scale > 0))
    return "the query temperature's floor_scale must be positive";
  return mask.problem();
}

AttentionImpl::AttentionImpl(const AttentionOptions& options, AttentionBlocks blocks)
    : options_(options),
      num_heads_(options.num_heads),
      num_kv_heads_(options.num_kv_heads),
      head_dim_(options.head_dim),
      scores_{options.query_scale.value_or(1.0 / std::sqrt(static_cast<double>(options.head_dim))), options.softcap,
              options.mask},
      positions_(std::move(blocks.positions)) {
  if (std::string problem = options.problem(); !problem.empty()) throw ft::Error("attention: " + problem);
  if (static_cast<bool>(blocks.q_norm) != static_cast<bool>(blocks.k_norm))
    throw ft::Error("attention: a q norm and a k norm go together (both, or neither)");
  const bool bias = options.projection_bias;
  q_proj = register_module("q_proj", Linear(options.embed_dim, num_heads_ * head_dim_, bias));
  k_proj = register_module("k_proj", Linear(options.embed_dim, num_kv_heads_ * head_dim_, bias));
  v_proj = register_module("v_proj", Linear(options.embed_dim, num_kv_heads_ * head_dim_, bias));
  output_proj = register_module("output_proj", Linear(num_heads_ * head_dim_, options.embed_dim, false));
  if (blocks.q_norm) {
    q_norm = register_module("q_norm", std::move(blocks.q_norm));
    k_norm = register_module("k_norm", std::move(blocks.k_norm));
  }
}

at::Tensor AttentionImpl::forward(const at::Tensor& x, const at::Tensor& positions, const at::Tensor& mask,
                                  const DocumentLengths& documents) const {
  const std::int64_t b = x.size(0), s = x.size(1);
  at::Tensor q = q_proj->forward(x).view({b, s, num_heads_, head_dim_});
  at::Tensor k = k_proj->forward(x).view({b, s, num_kv_heads_, head_dim_});
  const auto normalize = [&] {
    if (!q_norm) return;
    q = q_norm->forward(q);
    k = k_norm->forward(k);
  };
  if (!options_.norm_after_positions) normalize();
  if (positions_) {
    q = positions_->apply(q, positions);
    k = positions_->apply(k, positions);
  }
  if (options_.norm_after_positions) normalize();
  if (const auto& temperature = options_.query_temperature) {
    // [b or 1, s] float32 factors, one per query position.
    const at::Tensor p = positions.to(q.scalar_type() == at::kDouble ? at::kDouble : at::kFloat);
    const at::Tensor factor =
        at::log1p(at::floor((p + 1.0) / temperature->floor_scale)) * temperature->attn_scale + 1.0;
    q = (q * factor.view({p.dim() == 2 ? p.size(0) : 1, s, 1, 1})).to(q.scalar_type());
  }
  at::Tensor v = v_proj->forward(x).view({b, s, num_kv_heads_, head_dim_});
  if (kv_cache) {
    if (!documents.empty()) throw ft::Error("attention: the KV cache holds one sequence per row, not packed documents");
    return output_proj->forward(kv_cache->attend(q, k, v, positions, scores_));
  }
  q = q.transpose(1, 2);
  k = k.transpose(1, 2);
  v = v.transpose(1, 2);
  at::Tensor out;
  if (context_parallel) {
    if (mask.defined())
      throw ft::Error("attention: under context parallelism packed rows pass their document lengths, not a mask");
    out = context_parallel_attention(q, k, v, documents, scores_, *context_parallel);
  } else if (documents.empty()) {
    out = attend(q, k, v, mask);
  } else {
    if (mask.defined()) throw ft::Error("attention: packed documents take no mask (their attention is block-causal)");
    if (static_cast<std::int64_t>(documents.size()) != b)
      throw ft::Error("attention: document lengths for " + std::to_string(documents.size()) + " rows, the batch has " +
                      std::to_string(b));
    // Each document as a sequence of its own: the fused kernels run on it without a mask tensor,
    // and nothing of size [s, s] exists for the packed row.
    std::vector<at::Tensor> rows;
    for (std::int64_t i = 0; i < b; ++i) {
      std::vector<at::Tensor> pieces;
      std::int64_t start = 0;
      for (const std::int64_t length : documents[static_cast<std::size_t>(i)]) {
        if (length < 0 || start + length > s) break;
        if (length == 0) continue;
        const auto piece = [&](const at::Tensor& t) { return t.narrow(0, i, 1).narrow(2, start, length); };
        pieces.push_back(attend(piece(q), piece(k), piece(v), at::Tensor()));
        start += length;
      }
      if (start != s)
        throw ft::Error("attention: row " + std::to_string(i) + "'s document lengths do not sum to its " +
                        std::to_string(s) + " positions");
      rows.push_back(pieces.size() == 1 ? pieces[0] : at::cat(pieces, 2));
    }
    out = rows.size() == 1 ? rows[0] : at::cat(rows, 0);
  }
  return output_proj->forward(out.transpose(1, 2).reshape({b, s, num_heads_ * head_dim_}));
}

at::Tensor AttentionImpl::attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                 const at::Tensor& mask) const {
  const std::int64_t s = q.size(2);
  if (scores_.softcap > 0) {
    at::Tensor allowed = narrowed_mask(mask, s, scores_.mask, q.options());
    return explicit_attention(q, k, v, allowed.dim() == 3 ? allowed.unsqueeze(1) : allowed, scores_);
  }
  // LibTorch's fused attention on every device: flash, cuDNN or memory-efficient kernels on
  // CUDA, the flash kernel on the CPU, where it beat fthost's matmul + fused masked softmax
  // path at every benchmark shape (bench/attention_cpu.cpp, docs/performance.md). The [s, s]
  // scores never exist in memory, and a causal mask is no tensor at all.
  std::optional<at::Tensor> mask_4d;  // nullopt, not an undefined tensor: LibTorch checks a given mask's dtype
  if (scores_.mask.narrows_causal()) {
    mask_4d = narrowed_mask(mask, s, scores_.mask, q.options());
  } else if (mask.defined()) {
    mask_4d = mask;
  }
  if (mask_4d && mask_4d->dim() == 3) mask_4d = mask_4d->unsqueeze(1);
  return at::scaled_dot_product_attention(q, k, v, mask_4d, 0.0, /*is_causal=*/!mask_4d.has_value(),
                                          options_.query_scale,
                                          /*enable_gqa=*/num_heads_ != num_kv_heads_);
}

at::Tensor explicit_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& allowed,
                              const AttentionScores& scores) {
  const std::int64_t group = q.size(1) / k.size(1);
  const at::Tensor keys = group > 1 ? k.repeat_interleave(group, 1) : k;
  const at::Tensor values = group > 1 ? v.repeat_interleave(group, 1) : v;
  at::Tensor weights = at::matmul(q, keys.transpose(-1, -2)) * scores.scale;
  weights = ft::soft_cap(weights, scores.softcap);
  weights = weights.masked_fill(allowed.logical_not(), -std::numeric_limits<float>::infinity());
  const at::Tensor probs =
      at::softmax(weights, -1, q.scalar_type() == at::kDouble ? at::kDouble : at::kFloat).to(q.scalar_type());
  return at::matmul(probs, values);
}

namespace {

at::Tensor causal_band(std::int64_t seq_len, const AttentionMask& kind, const at::TensorOptions& device) {
  const at::Tensor index = at::arange(seq_len, device.dtype(at::kLong));
  return attention_allowed(kind, index.unsqueeze(1), index.unsqueeze(0));
}

// Every layer of one forward (and a checkpointed layer's recompute) asks for the same bands: built
// once per sequence length, mask kind and device, not once per layer. Read-only once built.
const at::Tensor& shared_causal_band(std::int64_t seq_len, const AttentionMask& kind, const at::TensorOptions& device) {
  struct Bands {
    std::int64_t seq_len = -1;
    c10::Device device = c10::Device(c10::DeviceType::CPU);
    std::map<std::pair<AttentionMask::Kind, std::int64_t>, at::Tensor> by_kind;  // Gemma 2 alternates two
  };
  thread_local Bands bands;
  if (bands.seq_len != seq_len || bands.device != device.device()) bands = Bands{seq_len, device.device(), {}};
  at::Tensor& band = bands.by_kind[{kind.kind, kind.size}];
  if (!band.defined()) band = causal_band(seq_len, kind, device);
  return band;
}

}  // namespace

at::Tensor narrowed_mask(const at::Tensor& mask, std::int64_t seq_len, const AttentionMask& kind,
                         const at::TensorOptions& device) {
  const at::Tensor& band = shared_causal_band(seq_len, kind, device);
  return mask.defined() ? mask.logical_and(band) : band;
}

}  // namespace ft::nn
