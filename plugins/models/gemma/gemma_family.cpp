// Gemma: a 256k vocabulary tied to the output, 256-wide heads, GeGLU, (1 + w) norms and
// embeddings scaled by sqrt(dim). torchtune's gemma builder and named sizes, the config.json of
// model_type "gemma", and the Gemma tokenizer of a model directory.
#include "torchtune_builders.h"

#include <ft/model_family.h>
#include <ft/plugin.h>

namespace {

using namespace ft_models;

std::shared_ptr<const FamilyHf> gemma_hf() {
  auto f = std::make_shared<FamilyHf>();
  f->model_type = "gemma";
  f->architecture = "GemmaForCausalLM";
  f->absent_head_dim = 256;  // GemmaConfig's default
  f->absent_tie_word_embeddings = true;
  f->own_activation = true;
  // Gemma's config.json may say "gelu" in hidden_act: Hugging Face computes the tanh
  // approximation unless hidden_activation says otherwise, and so does fthost.
  f->read_own = [family = f.get()](const ConfigJsonReader& json, DecoderConfig& c) {
    read_scaled_geglu_decoder(json, *family, c);
  };
  f->write_own = [](const DecoderConfig& c, nlohmann::ordered_json& j) {
    j["hidden_activation"] = "gelu_pytorch_tanh";
    j["attention_bias"] = c.qkv_bias;
  };
  return f;
}

DecoderConfig gemma_sized(std::int64_t layers, std::int64_t heads, std::int64_t kv_heads, std::int64_t dim,
                          std::int64_t hidden) {
  DecoderConfig c;
  c.vocab_size = 256000;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.embed_dim = dim;
  c.head_dim = 256;
  c.intermediate_dim = hidden;
  c.max_seq_len = 8192;
  c.norm_eps = 1e-6;
  c.rope_base = 10000.0;
  use_scaled_geglu_decoder(c);
  return c;
}

void register_components(ft::Registry& reg) {
  const auto hf = gemma_hf();
  ft::Schema gemma = common_schema("10000.0", "1e-6", HeadDimKey::Required, TieKey::Absent);
  gemma.required("intermediate_dim", ft::ValueType::Int, "MLP width");
  reg.add<ft::Model>("torchtune.models.gemma.gemma", gemma, "Gemma decoder of any size (GeGLU, tied)",
                     [hf](const ft::ConfigNode& cfg, ft::Model::Args args) {
                       DecoderConfig c = common_config(cfg);
                       c.intermediate_dim = cfg.get<std::int64_t>("intermediate_dim");
                       use_scaled_geglu_decoder(c);
                       return build_checked(cfg, c, hf, args);
                     });
  register_named_sizes(reg,
                       {{"torchtune.models.gemma.gemma_2b", "Gemma 2B (multi-query attention, tied)",
                         gemma_sized(18, 8, 1, 2048, 16384)},
                        {"torchtune.models.gemma.gemma_7b", "Gemma 7B (tied)", gemma_sized(28, 16, 16, 3072, 24576)}},
                       hf);
  register_hf_config_builder(reg, "fthost.models.gemma.from_hf_config",
                             "a Gemma architecture read from a Hugging Face config.json", hf);

  register_family(reg,
                  {"gemma",
                   {"gemma"},
                   {"GemmaForCausalLM"},
                   {"GEMMA"},
                   "fthost.models.gemma.from_hf_config",
                   tokenizer_by_model_type("gemma", "torchtune.models.gemma.gemma_tokenizer", {"tokenizer.model"})});
}

}  // namespace

FT_PLUGIN("ft_model_gemma", "0.1.0", register_components)
