// Choosing the next token from the model's logits: greedy (temperature 0), or sampling at a
// temperature from the top-k tokens and/or the top-p nucleus, with a seeded generator of its
// own, so a seed gives the same tokens on every machine and build.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace fthost {

struct SamplingSettings {
  double temperature = 0;  // 0: greedy (the most likely token)
  std::int64_t top_k = 0;  // 0: every token
  double top_p = 1.0;      // 1: every token
};

class TokenSampler {
 public:
  // Throws ft::Error on a negative temperature, negative top_k or top_p outside (0, 1].
  TokenSampler(SamplingSettings settings, std::uint64_t seed);

  // The chosen token id. `logits` has one entry per vocabulary id.
  std::int64_t next(const std::vector<float>& logits);

  const SamplingSettings& settings() const { return settings_; }

 private:
  double uniform();  // in [0, 1), 53 random bits

  SamplingSettings settings_;
  std::mt19937_64 engine_;
};

// The first id of the largest logit.
std::int64_t argmax(const std::vector<float>& logits);

}  // namespace fthost
