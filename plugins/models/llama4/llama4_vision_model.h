// Llama 4 with images (Hugging Face's Llama4ForConditionalGeneration, torchtune's
// EarlyFusionModel): the mixture-of-experts decoder of the family, whose <|patch|> token
// embeddings are replaced, in order, by the projected features of the batch's image tiles. Every
// decoder mechanism (sharding, checkpointing, tensor, expert and context parallelism) is the
// decoder's; the vision tower and projector belong to the root sharding unit.
#pragma once

#include "decoder_config.h"
#include "family_model.h"
#include "llama4_vision_config.h"

#include <ft/model.h>

#include <memory>

namespace ft_models {

// torchtune's EarlyFusionModel trainable split: the decoder (its embedding included), the vision
// encoder, and the fusion parameters (the encoder's projection head: Hugging Face's pixel-shuffle
// MLP and the projector).
struct EarlyFusionTrainable {
  bool decoder = true;
  bool encoder = false;
  bool fusion = true;
};

std::unique_ptr<ft::Model> make_llama4_vision_model(const DecoderConfig& decoder, const Llama4VisionConfig& vision,
                                                    const EarlyFusionTrainable& trainable,
                                                    std::shared_ptr<const FamilyHf> family,
                                                    const ft::Model::Args& args);

}  // namespace ft_models
