// How attention encodes where a token sits: a block the family's builder hands to each attention
// layer (rotary embeddings with their scalings; none for a model without positions in attention).
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>

namespace ft::nn {

class PositionalEmbedding {
 public:
  virtual ~PositionalEmbedding() = default;
  // x: [b, s, heads, head_dim] queries or keys; positions: [b, s] or [s] int64, where the tokens
  // sit in their sequences. Returns x with the positions applied, in x's dtype.
  virtual at::Tensor apply(const at::Tensor& x, const at::Tensor& positions) const = 0;
};

}  // namespace ft::nn
