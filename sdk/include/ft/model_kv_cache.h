// Model role: key/value caches for generation (torchtune's setup_caches / reset_caches). A model
// without it is generated from by recomputing the sequence.
#pragma once

#include <ft/model.h>

#include <cstdint>

namespace ft {

class ModelKvCache {
 public:
  static constexpr ModelRole role = ModelRole::KvCache;
  virtual ~ModelKvCache() = default;
  // Allocates, for every attention layer, the keys and values of `batch_size` sequences of up to
  // `max_seq_len` tokens. From then on forward() is incremental, for inference without autograd:
  // input.input_pos (required) says where input.tokens sit in their sequences, their keys and
  // values are written to the cache there, and each token attends to the cached positions up to
  // its own (causal; input.mask must be undefined). Prefill a prompt in one call, then feed one
  // token per call: each new token costs attention over the positions so far, not a recompute.
  virtual void setup_caches(std::int64_t batch_size, std::int64_t max_seq_len) = 0;
  // Forgets every cached position (a new sequence), keeping the memory.
  virtual void reset_caches() = 0;
  // Frees the caches: forward() is the full-sequence forward again.
  virtual void remove_caches() = 0;
};

}  // namespace ft
