// How one attention layer turns q.k into weights: the scale, an optional soft cap, and the mask
// kind. Shared by the training forward and the key/value cache so generation computes exactly
// what training did.
#pragma once

#include <ft/nn/attention_mask.h>

namespace ft::nn {

struct AttentionScores {
  double scale = 1.0;  // multiplies q.k (1/sqrt(head_dim) unless the family says otherwise)
  double softcap = 0;  // scores -> softcap * tanh(scores / softcap); 0: none
  AttentionMask mask;
};

}  // namespace ft::nn
