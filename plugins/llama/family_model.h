// The decoder of one of the families this plugin builds, with its Hugging Face config.json.
// Everything else (forward, parallelism, caches, HF parameter names) is ft::nn::DecoderModel's.
#pragma once

#include "decoder_config.h"

#include <ft/model.h>

#include <memory>

namespace ft_llama {

// `config.family` (the HF model_type) picks the config.json keys and, for phi3, the fused
// checkpoint layout.
std::unique_ptr<ft::Model> make_family_model(const DecoderConfig& config, const ft::Model::Args& args);

}  // namespace ft_llama
