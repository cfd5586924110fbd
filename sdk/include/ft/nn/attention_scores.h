// How one attention layer turns q.k into weights: the scale, an optional soft cap, and an
// optional sliding window. Shared by the training forward and the key/value cache so generation
// computes exactly what training did.
#pragma once

#include <cstdint>

namespace ft::nn {

struct AttentionScores {
  double scale = 1.0;               // multiplies q.k (1/sqrt(head_dim) unless the family says otherwise)
  double softcap = 0;               // scores -> softcap * tanh(scores / softcap); 0: none
  std::int64_t sliding_window = 0;  // a query sees at most this many positions, itself included; 0: all
};

}  // namespace ft::nn
