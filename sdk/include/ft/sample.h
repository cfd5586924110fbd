// One training example as datasets produce it, before batching. Labels are unshifted
// (torchtune's convention): labels[i] is the target at position i, -100 masks it; the recipe shifts.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace ft {

inline constexpr std::int64_t kIgnoreIndex = -100;

// One image of a multimodal sample, as the model's image transform made it (Llama 3.2 Vision's:
// the tiles of its best-fitting canvas), with the text positions that see it.
struct SampleImage {
  at::Tensor tiles;       // [tiles, channels, size, size]
  std::int64_t rows = 1;  // the canvas in tiles (torchtune's aspect_ratio)
  std::int64_t columns = 1;
  // [text tokens, tiles x tokens per tile] bool: true where a text position attends to one of the
  // image's tokens (torchtune's VisionCrossAttentionMask).
  at::Tensor encoder_mask;
};

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
  // Multimodal samples: the images, in the order of their image tokens in `tokens`. Empty for text.
  std::vector<SampleImage> images{};
};

}  // namespace ft
