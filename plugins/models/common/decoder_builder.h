// The ft::nn decoder a DecoderConfig describes, composed block by block.
#pragma once

#include "decoder_config.h"

#include <ft/nn/transformer_decoder.h>

namespace ft_models {

ft::nn::TransformerDecoder build_decoder(const DecoderConfig& config);

}  // namespace ft_models
