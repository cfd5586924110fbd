// What a family folder describes of its Hugging Face config.json, and the model built from a
// DecoderConfig with it. The keys every family here shares (sizes, norms, RoPE) are read and
// written once (family_model.cpp); a family adds its own keys with read_own and write_own, side
// by side in its folder, so the two directions cannot drift apart.
#pragma once

#include "config_json_reader.h"
#include "decoder_config.h"

#include <ft/model.h>
#include <ft/nn/hf_parameter_names.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ft_models {

struct FamilyHf {
  std::string model_type;    // config.json's model_type
  std::string architecture;  // config.json's architectures entry (transformers' AutoModel)
  ft::nn::HfLayout layout;   // fused checkpoint tensors
  // A multimodal checkpoint's config.json holds the decoder's keys under this key, with this
  // model_type there (Llama 4: "text_config", "llama4_text"); empty: at the top level.
  std::string text_config_key;
  std::string text_model_type;
  // head_dim as the family's Hugging Face classes read it: the value when the key is absent (0:
  // hidden_size / num_attention_heads), and whether null (or 0) means that derived value too.
  std::int64_t absent_head_dim = 0;
  bool null_head_dim_derives = false;
  bool zero_head_dim_derives = false;
  double absent_rms_norm_eps = 1e-6;
  bool absent_tie_word_embeddings = false;
  bool qkv_bias = false;        // q/k/v biases always (attention_bias is not read)
  bool own_activation = false;  // read_own reads the activation; otherwise only silu is accepted
  // Name prefixes of checkpoint tensors the model does not train but saves back unchanged (a
  // multimodal checkpoint's vision tower when only its language model is finetuned).
  std::vector<std::string> carried_prefixes;
  // The family's own keys, read after the shared ones (refusing what it cannot express) and
  // written after them.
  std::function<void(const ConfigJsonReader&, DecoderConfig&)> read_own;
  std::function<void(const DecoderConfig&, nlohmann::ordered_json&)> write_own;
};

// The architecture a config.json describes; fails naming the key.
DecoderConfig read_hf_config(const ConfigJsonReader& json, const FamilyHf& family);
// The config.json of `config`, with torch_dtype `dtype`.
std::string write_hf_config(const DecoderConfig& config, const FamilyHf& family, c10::ScalarType dtype);

// The tanh-approximated GELU of a GeGLU family's config.json: hidden_activation, else hidden_act,
// where "gelu" means the tanh approximation as Hugging Face computes it.
void read_gelu_tanh_activation(const ConfigJsonReader& json, const FamilyHf& family, DecoderConfig& c);

// A decoder with (1 + w) norms, GeGLU and scaled embeddings, tied: the activation as above, and
// tie_word_embeddings false refused.
void read_scaled_geglu_decoder(const ConfigJsonReader& json, const FamilyHf& family, DecoderConfig& c);

std::unique_ptr<ft::Model> make_family_model(const DecoderConfig& config, std::shared_ptr<const FamilyHf> family,
                                             const ft::Model::Args& args);

}  // namespace ft_models
