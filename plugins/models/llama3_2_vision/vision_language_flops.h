// Llama 3.2 Vision's training FLOPs for the logged mfu, counted as a decoder's are
// (ft::Model::training_flops_per_position: 6 x the weights each token multiplies through, plus
// 12 x width x keys per query for attention, whatever is frozen), from the modules as built: a
// sharding strategy later leaves a rank only its share.
//
// A text position goes through the self-attention layers, the cross-attention layers' query and
// output projections and MLPs, and the output projection. An image costs what the encoder
// computes: every image of the batch (padding images included) as max_num_tiles tiles of
// tokens padded to a multiple of 8, through the patch embedding and every local and global layer,
// attention across all its tiles' tokens; then the image states the decoder reads (the batch's
// tiles) through the projector and every cross-attention layer's keys and values, and each text
// position's cross-attention over them.
#pragma once

#include <ft/collate.h>

#include <cstdint>

#include "vision_language_model.h"

namespace ft_models {

class VisionLanguageFlops {
 public:
  explicit VisionLanguageFlops(const VisionLanguageModelImpl& model);
  double per_position(std::int64_t seq_len) const;
  // The images of one micro-batch, as padded_collate_tiled_images_and_mask batches them.
  double of_images(const ft::BatchImages& images) const;

 private:
  std::int64_t max_num_tiles_ = 0;
  std::int64_t tokens_per_tile_ = 0;
  double position_weights_ = 0;        // per text position
  double self_attention_width_ = 0;    // heads x head_dim, summed over the self-attention layers
  double cross_attention_width_ = 0;   // the same over the cross-attention layers
  double patch_weights_ = 0;           // per patch
  double vision_layer_weights_ = 0;    // per vision token, local and global layers
  double vision_attention_width_ = 0;  // hidden, summed over the local and global layers
  double image_state_weights_ = 0;     // per image state: the projector and the cross keys and values
};

}  // namespace ft_models
