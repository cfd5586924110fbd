// Model role: a model that reads images beside its text (Llama 3.2 Vision's encoder and
// cross-attention layers). The recipe hands a multimodal batch's images to this role's forward;
// a batch with images for a model without the role stops the run, naming the model.
#pragma once

#include <ft/collate.h>
#include <ft/model.h>

namespace ft {

class ModelImageInput {
 public:
  // Role 7, after the six ModelRole names (model.h): a new role is a new id, so models built
  // before it answer nullptr for it.
  static constexpr ModelRole role = static_cast<ModelRole>(7);
  virtual ~ModelImageInput() = default;
  // forward() with the micro-batch's images; `images.encoder_mask` is [b, s, ...] over input.tokens.
  virtual ModelOutput forward_with_images(const ModelInput& input, const BatchImages& images,
                                          const OutputRequest& request) = 0;
  // Training FLOPs (forward and backward) of encoding `images`' real tiles, counted as
  // Model::training_flops_per_position counts a position's (6 x the parameters each image token
  // multiplies through, plus attention), for the logged mfu. 0: unknown; the mfu then leaves the
  // images out.
  virtual double image_training_flops(const BatchImages& images) const {
    (void)images;
    return 0;
  }
};

}  // namespace ft
