#include "generate/token_sampler.h"

#include <ft/errors.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace fthost {

TokenSampler::TokenSampler(SamplingSettings settings, std::uint64_t seed) : settings_(settings), engine_(seed) {
  if (!(settings_.temperature >= 0))
    throw ft::Error("--temperature: must be 0 (greedy) or positive, got " + std::to_string(settings_.temperature));
  if (settings_.top_k < 0)
    throw ft::Error("--top-k: must be 0 (off) or positive, got " + std::to_string(settings_.top_k));
  if (!(settings_.top_p > 0 && settings_.top_p <= 1))
    throw ft::Error("--top-p: must be in (0, 1], got " + std::to_string(settings_.top_p));
}

double TokenSampler::uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

std::int64_t argmax(const std::vector<float>& logits) {
  if (logits.empty()) throw ft::Error("no logits to choose a token from");
  return std::max_element(logits.begin(), logits.end()) - logits.begin();
}

std::int64_t TokenSampler::next(const std::vector<float>& logits) {
  if (settings_.temperature == 0) return argmax(logits);
  if (logits.empty()) throw ft::Error("no logits to choose a token from");
  // Candidates from the most likely down; ties keep the lower id first, so the order (and with
  // it every draw) is fully determined.
  std::vector<std::int64_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  const auto more_likely = [&](std::int64_t a, std::int64_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  std::size_t keep = order.size();
  if (settings_.top_k > 0 && static_cast<std::size_t>(settings_.top_k) < keep) {
    keep = static_cast<std::size_t>(settings_.top_k);
    std::partial_sort(order.begin(), order.begin() + keep, order.end(), more_likely);
  } else {
    std::sort(order.begin(), order.end(), more_likely);
  }
  // Softmax at the temperature over the kept candidates, in double.
  const double top = logits[order[0]];
  std::vector<double> weights(keep);
  double total = 0;
  for (std::size_t i = 0; i < keep; ++i) {
    weights[i] = std::exp((static_cast<double>(logits[order[i]]) - top) / settings_.temperature);
    total += weights[i];
  }
  // The nucleus: the fewest most likely candidates whose probability reaches top_p.
  if (settings_.top_p < 1) {
    double mass = 0;
    std::size_t nucleus = 0;
    while (nucleus < keep && mass < settings_.top_p * total) mass += weights[nucleus++];
    keep = std::max<std::size_t>(nucleus, 1);
    total = mass > 0 ? mass : weights[0];
  }
  double draw = uniform() * total;
  for (std::size_t i = 0; i < keep; ++i) {
    draw -= weights[i];
    if (draw < 0) return order[i];
  }
  return order[keep - 1];  // rounding left a sliver of mass
}

}  // namespace fthost
