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
  // Packed samples only (empty otherwise): several documents share one sequence.
  // input_pos[i] is token i's position inside its own document (RoPE restarts per document);
  // seq_lens are the lengths of the documents in order, padding counted as a last one, and sum
  // to tokens.size(). padded_collate_packed turns them into a block-causal mask.
  std::vector<std::int64_t> input_pos;
  std::vector<std::int64_t> seq_lens;
  // The source was longer than max_seq_len and was cut to it (`fthost data` counts these).
  bool truncated = false;
};

}  // namespace ft
