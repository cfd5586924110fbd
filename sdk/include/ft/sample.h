// One training example as datasets produce it, before batching. Labels are unshifted
// (torchtune's convention): labels[i] is the target at position i, -100 masks it; the recipe shifts.
#pragma once

#include <cstdint>
#include <vector>

namespace ft {

inline constexpr std::int64_t kIgnoreIndex = -100;

struct Sample {
  std::vector<std::int64_t> tokens;
  std::vector<std::int64_t> labels;
};

}  // namespace ft
