// The key/value cache of one attention layer, for generation: the keys and values of every
// position fed so far stay here, so a new token attends to them without recomputing the prefix.
#pragma once

#include <ft/nn/attention_scores.h>

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace ft::nn {

class KVCache {
 public:
  KVCache(std::int64_t batch_size, std::int64_t max_seq_len);

  // q: [b, s, heads, head_dim], k and v: [b, s, kv_heads, head_dim] (after the rotary embedding),
  // positions: [b, s] or [s] int64, where the s tokens sit in their sequences. Writes k and v
  // there, then returns the grouped-query attention of q over the cached positions up to each
  // token's own (narrowed by `scores.mask`): [b, s, heads * head_dim].
  // Scores and softmax in float32.
  at::Tensor attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& positions,
                    const AttentionScores& scores);

  // Zeroes the cached keys and values for a new sequence.
  void reset();

  std::int64_t max_seq_len() const { return max_seq_len_; }

 private:
  void store(const at::Tensor& k, const at::Tensor& v, const at::Tensor& positions);

  std::int64_t batch_size_;
  std::int64_t max_seq_len_;
  // [b, kv_heads, max_seq_len, head_dim]: one position's keys per row, so the filled prefix of a
  // head is one contiguous block. Allocated on first use with the layer's dtype, device and
  // (tensor-parallel: local) head count.
  at::Tensor keys_, values_;
};

}  // namespace ft::nn
