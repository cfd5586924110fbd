// Collate interface (`torchtune.data.padded_collate_*`): samples -> one micro-batch of tensors.
// The recipe passes the padding id (the tokenizer's, or the config's) and the loss's ignore index.
#pragma once

#include <ft/kind.h>
#include <ft/sample.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace ft {

// The images of a multimodal micro-batch (torchtune's padded_collate_tiled_images_and_mask); every
// tensor undefined for a batch of text.
struct BatchImages {
  at::Tensor images;        // [b, images, tiles, channels, size, size]; padding tiles and images are zeros
  at::Tensor aspect_ratio;  // [b, images, 2] int64 (rows, columns) of each canvas; (1, 1) for padding
  at::Tensor tile_count;    // [b, images] int64: each image's real tiles, 0 for a padding image
  at::Tensor encoder_mask;  // [b, s, images x tiles x tokens per tile] bool: which image tokens each position sees
  bool defined() const { return images.defined(); }
};

struct Batch {
  at::Tensor tokens;     // [b, s] int64
  at::Tensor labels;     // [b, s] int64, unshifted, ignore_index where padded or masked
  at::Tensor input_pos;  // [b, s] int64 positions, undefined unless packed
  at::Tensor mask;       // [b, s, s] bool attention mask, undefined unless a collate builds one (causal)
  // Packed rows: the lengths of each row's documents, in order, summing to s (the seed's
  // seq_lens); each document attends within itself. Empty unless packed.
  std::vector<std::vector<std::int64_t>> document_lengths;
  BatchImages images{};  // multimodal batches only
};

// The block-causal mask [b, s, s] (true = may attend) of packed rows: a position sees the earlier
// positions of its own document. For a model that takes no document lengths. Throws ft::Error
// when a row's lengths are negative or do not sum to `seq_len`.
at::Tensor block_causal_mask(const std::vector<std::vector<std::int64_t>>& document_lengths, std::int64_t seq_len);

class Collate {
 public:
  static constexpr Kind kind = Kind::Collate;
  struct Args {
    std::int64_t pad_id = 0;
    std::int64_t ignore_index = kIgnoreIndex;
    // The padded sequence length is a multiple of this (the seed's pad_to_multiple_of: the
    // tensor-parallel degree).
    std::int64_t pad_to_multiple_of = 1;
  };

  virtual ~Collate() = default;
  virtual Batch collate(const std::vector<Sample>& samples) const = 0;
};

}  // namespace ft
