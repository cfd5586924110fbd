#include <ft/nn/kv_cache.h>

#include <ft/errors.h>
#include <ft/model.h>

#include <ATen/ATen.h>

#include <limits>
#include <string>

namespace ft::nn {

KVCache::KVCache(std::int64_t batch_size, std::int64_t max_seq_len)
    : batch_size_(batch_size), max_seq_len_(max_seq_len) {
  if (batch_size < 1 || max_seq_len < 1)
    throw ft::Error("KV cache: batch size and max_seq_len must be positive, got " + std::to_string(batch_size) +
                    " and " + std::to_string(max_seq_len));
}

void KVCache::reset() {
  if (keys_.defined()) {
    keys_.zero_();
    values_.zero_();
  }
}

void KVCache::store(const at::Tensor& k, const at::Tensor& v, const at::Tensor& positions) {
  const std::int64_t b = k.size(0);
  if (b != batch_size_)
    throw ft::Error("KV cache: set up for a batch of " + std::to_string(batch_size_) + ", fed a batch of " +
                    std::to_string(b));
  if (!keys_.defined()) {
    keys_ = at::zeros({b, k.size(2), max_seq_len_, k.size(3)}, k.options());
    values_ = at::zeros_like(keys_);
  }
  for (std::int64_t row = 0; row < b; ++row) {
    const at::Tensor pos = positions.dim() == 1 ? positions : positions[row];
    keys_[row].index_copy_(1, pos, k[row].transpose(0, 1));
    values_[row].index_copy_(1, pos, v[row].transpose(0, 1));
  }
}

at::Tensor KVCache::attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& positions,
                           const AttentionScores& options) {
  const std::int64_t b = q.size(0), s = q.size(1), heads = q.size(2), head_dim = q.size(3);
  const std::int64_t kv_heads = k.size(2), group = heads / kv_heads;
  at::Tensor pos = positions.to(q.device());
  const std::int64_t lowest = pos.min().item<std::int64_t>(), highest = pos.max().item<std::int64_t>();
  if (lowest < 0 || highest >= max_seq_len_)
    throw ft::Error("KV cache: position " + std::to_string(lowest < 0 ? lowest : highest) + " is outside the cache's " +
                    std::to_string(max_seq_len_) + " positions");
  store(k, v, pos);
  // Only the positions fed so far take part: a token costs attention over its prefix.
  const std::int64_t length = highest + 1;
  const at::Tensor keys = keys_.narrow(2, 0, length);  // [b, kv, L, hd]
  const at::Tensor values = values_.narrow(2, 0, length);
  // The same grouped-query layout as the full forward: the `group` query heads that share a kv
  // head are stacked along the query axis of one matmul.
  at::Tensor grouped = q.transpose(1, 2).reshape({b, kv_heads, group * s, head_dim});
  at::Tensor scores = at::matmul(grouped, keys.transpose(-1, -2)).view({b, kv_heads, group, s, length});
  scores = scores.to(at::kFloat) * options.scale;
  scores = ft::soft_cap(scores, options.softcap);
  const at::Tensor token_pos = (pos.dim() == 1 ? pos.unsqueeze(0) : pos).unsqueeze(-1);  // [b or 1, s, 1]
  const at::Tensor key_pos = at::arange(length, pos.options()).view({1, 1, length});
  const at::Tensor allowed = attention_allowed(options.mask, token_pos, key_pos);
  scores = scores.masked_fill(allowed.unsqueeze(1).unsqueeze(1).logical_not(), -std::numeric_limits<float>::infinity());
  at::Tensor probs = at::softmax(scores, -1).to(q.scalar_type()).view({b, kv_heads, group * s, length});
  at::Tensor out = at::matmul(probs, values).view({b, heads, s, head_dim});
  return out.transpose(1, 2).reshape({b, s, heads * head_dim});
}

}  // namespace ft::nn
