// Which keys a query may see in one attention layer, as the family's builder chooses it per layer:
// causal (every earlier position), a sliding window (the last `size` positions, itself included:
// Mistral, Gemma 2, Phi-3), or chunked local attention (the earlier positions of its own chunk of
// `size`: Llama 4). Shared by the training forward and the key/value cache.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace ft::nn {

// Packed sequences: the lengths of the documents each batch row holds, in order, summing to the
// row's length. Attention stays within each document, as if each were a sequence of its own
// (the mask kind counted from the document's start), without an [s, s] mask. Empty: every row
// is one sequence.
using DocumentLengths = std::vector<std::vector<std::int64_t>>;

struct AttentionMask {
  enum class Kind { Causal, SlidingWindow, ChunkedLocal };
  Kind kind = Kind::Causal;
  std::int64_t size = 0;  // the window or the chunk, in positions; unused for Causal

  static AttentionMask causal() { return {}; }
  static AttentionMask sliding_window(std::int64_t window) { return {Kind::SlidingWindow, window}; }
  static AttentionMask chunked_local(std::int64_t chunk) { return {Kind::ChunkedLocal, chunk}; }
  // False for plain causal attention, which the fused kernels compute without a mask tensor.
  bool narrows_causal() const { return kind != Kind::Causal; }
  // Empty when usable, else what is wrong.
  const char* problem() const;
};

// Which keys each query may see, as a bool tensor broadcast from `query_positions` [..., 1] and
// `key_positions` [..., k] (absolute positions in the sequence).
at::Tensor attention_allowed(const AttentionMask& mask, const at::Tensor& query_positions,
                             const at::Tensor& key_positions);

}  // namespace ft::nn
