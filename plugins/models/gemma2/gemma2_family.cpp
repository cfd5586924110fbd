// Gemma 2: Gemma's decoder with four norms per layer, soft-capped attention scores and logits, a
// query scale of its own and a sliding window on the even-numbered layers. torchtune's gemma2
// builder and named sizes, the config.json of model_type "gemma2", and the Gemma tokenizer of a
// model directory.
#include "torchtune_builders.h"

#include <ft/model_family.h>
#include <ft/plugin.h>

namespace {

using namespace ft_models;
using NullIs = ConfigJsonReader::NullIs;

void read_gemma2(const ConfigJsonReader& json, const FamilyHf& family, DecoderConfig& c) {
  read_scaled_geglu_decoder(json, family, c);
  c.post_norms = true;
  // Soft caps: null means none in Hugging Face's Gemma 2; an absent one takes its defaults.
  c.attn_logit_softcap = json.number("attn_logit_softcapping", 50.0, NullIs::Default);
  c.final_logit_softcap = json.number("final_logit_softcapping", 30.0, NullIs::Default);
  if (json.is_null("attn_logit_softcapping")) c.attn_logit_softcap = 0;
  if (json.is_null("final_logit_softcapping")) c.final_logit_softcap = 0;
  c.query_pre_attn_scalar = json.number("query_pre_attn_scalar", 256.0);
  if (!(c.query_pre_attn_scalar > 0)) json.fail("query_pre_attn_scalar", "must be positive");
  c.sliding_window = json.integer("sliding_window", 4096);
  c.sliding_window_layers = SlidingWindowLayers::EvenIndexed;
  if (json.has("layer_types")) {
    const auto& types = json.at("layer_types");
    if (!types.is_array() || static_cast<std::int64_t>(types.size()) != c.num_layers)
      json.fail("layer_types", "expected one entry per layer");
    for (std::size_t i = 0; i < types.size(); ++i) {
      const std::string want = i % 2 == 0 ? "sliding_attention" : "full_attention";
      if (types[i] != want)
        json.fail("layer_types", "entry " + std::to_string(i) + " is " + types[i].dump() + "; fthost's Gemma 2 " +
                                     "slides on the even-numbered layers only (\"" + want + "\" there)");
    }
  }
}

std::shared_ptr<const FamilyHf> gemma2_hf() {
  auto f = std::make_shared<FamilyHf>();
  f->model_type = "gemma2";
  f->architecture = "Gemma2ForCausalLM";
  f->absent_head_dim = 256;  // Gemma2Config's default
  f->absent_tie_word_embeddings = true;
  f->own_activation = true;
  f->read_own = [family = f.get()](const ConfigJsonReader& json, DecoderConfig& c) { read_gemma2(json, *family, c); };
  f->write_own = [](const DecoderConfig& c, nlohmann::ordered_json& j) {
    j["hidden_activation"] = "gelu_pytorch_tanh";
    j["attention_bias"] = c.qkv_bias;
    j["sliding_window"] = c.sliding_window;
    j["attn_logit_softcapping"] = c.attn_logit_softcap > 0 ? nlohmann::ordered_json(c.attn_logit_softcap) : nullptr;
    j["final_logit_softcapping"] = c.final_logit_softcap > 0 ? nlohmann::ordered_json(c.final_logit_softcap) : nullptr;
    j["query_pre_attn_scalar"] =
        c.query_pre_attn_scalar > 0 ? c.query_pre_attn_scalar : static_cast<double>(c.resolved_head_dim());
  };
  return f;
}

// Soft caps 50 (scores) and 30 (logits), a 4096-token window on every other layer. The caps are
// the published configs' values: torchtune's gemma2_2b/9b/27b builders pass them swapped
// (docs/parity.md).
DecoderConfig gemma2_sized(std::int64_t layers, std::int64_t heads, std::int64_t kv_heads, std::int64_t dim,
                           std::int64_t hidden, std::int64_t head_dim, double query_pre_attn_scalar) {
  DecoderConfig c;
  c.vocab_size = 256000;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.embed_dim = dim;
  c.head_dim = head_dim;
  c.intermediate_dim = hidden;
  c.max_seq_len = 8192;
  c.norm_eps = 1e-6;
  c.rope_base = 10000.0;
  use_scaled_geglu_decoder(c);
  c.post_norms = true;
  c.attn_logit_softcap = 50.0;
  c.final_logit_softcap = 30.0;
  c.query_pre_attn_scalar = query_pre_attn_scalar;
  c.sliding_window = 4096;
  c.sliding_window_layers = SlidingWindowLayers::EvenIndexed;
  return c;
}

void register_components(ft::Registry& reg) {
  const auto hf = gemma2_hf();
  using ft::ValueType;
  ft::Schema gemma2 = common_schema("10000.0", "1e-6", HeadDimKey::Required, TieKey::Absent);
  gemma2.required("intermediate_dim", ValueType::Int, "MLP width")
      .optional("hidden_capping_value", ValueType::Float, "50.0", "soft cap of the attention scores")
      .optional("final_capping_value", ValueType::Float, "30.0", "soft cap of the output logits")
      .optional("sliding_window_size", ValueType::Int, "4096", "sliding window of the even-numbered layers")
      .optional("query_pre_attn_scalar", ValueType::Int, "", "scores scaled by 1/sqrt(this) (default head_dim)");
  reg.add<ft::Model>("torchtune.models.gemma2.gemma2", gemma2,
                     "Gemma 2 decoder of any size (soft caps, sliding window on even layers, four norms per layer)",
                     [hf](const ft::ConfigNode& cfg, ft::Model::Args args) {
                       DecoderConfig c = common_config(cfg);
                       c.intermediate_dim = cfg.get<std::int64_t>("intermediate_dim");
                       use_scaled_geglu_decoder(c);
                       c.post_norms = true;
                       c.attn_logit_softcap = cfg.get<double>("hidden_capping_value");
                       c.final_logit_softcap = cfg.get<double>("final_capping_value");
                       c.sliding_window = cfg.get<std::int64_t>("sliding_window_size");
                       c.sliding_window_layers = SlidingWindowLayers::EvenIndexed;
                       c.query_pre_attn_scalar = static_cast<double>(cfg.get<std::int64_t>("query_pre_attn_scalar", 0));
                       return build_checked(cfg, c, hf, args);
                     });
  const std::string summary = " (soft caps 50/30, sliding window 4096 on even layers)";
  register_named_sizes(
      reg,
      {{"torchtune.models.gemma2.gemma2_2b", "Gemma 2 2B" + summary, gemma2_sized(26, 8, 4, 2304, 9216, 256, 256)},
       {"torchtune.models.gemma2.gemma2_9b", "Gemma 2 9B" + summary, gemma2_sized(42, 16, 8, 3584, 14336, 256, 256)},
       {"torchtune.models.gemma2.gemma2_27b", "Gemma 2 27B" + summary,
        gemma2_sized(46, 32, 16, 4608, 36864, 128, 144)}},
      hf);
  register_hf_config_builder(reg, "fthost.models.gemma2.from_hf_config",
                             "a Gemma 2 architecture read from a Hugging Face config.json", hf);

  register_family(reg,
                  {"gemma2",
                   {"gemma2"},
                   {"Gemma2ForCausalLM"},
                   {"GEMMA2"},
                   "fthost.models.gemma2.from_hf_config",
                   tokenizer_by_model_type("gemma2", "torchtune.models.gemma.gemma_tokenizer", {"tokenizer.model"})});
}

}  // namespace

FT_PLUGIN("ft_model_gemma2", "0.1.0", register_components)
