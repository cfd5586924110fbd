// The layers of the decoder a DecoderConfig describes, without its embedding, final norm and
// output: for a model that composes them with layers of its own (Llama 3.2 Vision's fusion
// decoder interleaves cross-attention layers).
#pragma once

#include "decoder_config.h"

#include <ft/nn/transformer_layer.h>

#include <vector>

namespace ft_models {

std::vector<ft::nn::TransformerLayer> build_decoder_layers(const DecoderConfig& config);

}  // namespace ft_models
