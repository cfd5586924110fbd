#include <ft/nn/attention_mask.h>

#include <ATen/ATen.h>

namespace ft::nn {

const char* AttentionMask::problem() const {
  if (kind == Kind::SlidingWindow && size <= 0) return "a sliding window must be at least one position";
  if (kind == Kind::ChunkedLocal && size <= 0) return "an attention chunk must be at least one position";
  return "";
}

at::Tensor attention_allowed(const AttentionMask& mask, const at::Tensor& query_positions,
                             const at::Tensor& key_positions) {
  at::Tensor allowed = key_positions <= query_positions;
  switch (mask.kind) {
    case AttentionMask::Kind::Causal: break;
    case AttentionMask::Kind::SlidingWindow:
      allowed = allowed.logical_and(query_positions - key_positions < mask.size);
      break;
    case AttentionMask::Kind::ChunkedLocal:
      allowed = allowed.logical_and(at::floor_divide(query_positions, mask.size) ==
                                    at::floor_divide(key_positions, mask.size));
      break;
  }
  return allowed;
}

}  // namespace ft::nn
