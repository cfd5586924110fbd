// Mistral: Llama's decoder with grouped-query attention and an optional sliding window on every
// layer. torchtune's mistral builder and named size, the config.json of model_type "mistral", and
// the Mistral tokenizer of a model directory. torchtune's builder has no sliding window; the key
// is fthost's, for the checkpoints whose config.json sets one (docs/parity.md).
#include "torchtune_builders.h"

#include <ft/model_family.h>
#include <ft/plugin.h>

namespace {

using namespace ft_models;

std::shared_ptr<const FamilyHf> mistral_hf() {
  auto f = std::make_shared<FamilyHf>();
  f->model_type = "mistral";
  f->architecture = "MistralForCausalLM";
  // MistralConfig reads `head_dim or hidden_size // num_attention_heads`: null and 0 both derive.
  f->null_head_dim_derives = true;
  f->zero_head_dim_derives = true;
  f->read_own = [](const ConfigJsonReader& json, DecoderConfig& c) {
    c.sliding_window = json.integer("sliding_window", 0, ConfigJsonReader::NullIs::Default);  // null: none
  };
  f->write_own = [](const DecoderConfig& c, nlohmann::ordered_json& j) {
    j["sliding_window"] = c.sliding_window > 0 ? nlohmann::ordered_json(c.sliding_window) : nullptr;
  };
  return f;
}

// Mistral 7B v0.1, the checkpoint torchtune's configs name: a 4096-token sliding window.
DecoderConfig mistral_7b() {
  DecoderConfig c;
  c.vocab_size = 32000;
  c.num_layers = 32;
  c.num_heads = 32;
  c.num_kv_heads = 8;
  c.embed_dim = 4096;
  c.intermediate_dim = 14336;
  c.max_seq_len = 32768;
  c.norm_eps = 1e-5;
  c.rope_base = 10000.0;
  c.sliding_window = 4096;
  return c;
}

void register_components(ft::Registry& reg) {
  const auto hf = mistral_hf();
  register_sliding_window_builder(reg, "torchtune.models.mistral.mistral",
                                  "Mistral decoder of any size (grouped-query attention, optional sliding window)", hf);
  register_named_sizes(
      reg, {{"torchtune.models.mistral.mistral_7b", "Mistral 7B v0.1 (sliding window 4096)", mistral_7b()}}, hf);
  register_hf_config_builder(reg, "fthost.models.mistral.from_hf_config",
                             "a Mistral architecture read from a Hugging Face config.json", hf);

  // A SentencePiece model where the directory has one, else the tokenizer.json.
  register_family(reg, {"mistral",
                        {"mistral"},
                        {"MistralForCausalLM"},
                        {"MISTRAL"},
                        "fthost.models.mistral.from_hf_config",
                        tokenizer_by_model_type("mistral", "torchtune.models.mistral.mistral_tokenizer",
                                                {"tokenizer.model", "tokenizer.json"})});
}

}  // namespace

FT_PLUGIN("ft_model_mistral", "0.1.0", register_components)
