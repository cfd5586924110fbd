#include "family_model.h"

#include "decoder_builder.h"

#include <ft/nn/decoder_model.h>

#include <utility>

namespace ft_models {

namespace {

std::int64_t head_dim_from(const ConfigJsonReader& json, const FamilyHf& family) {
  constexpr std::int64_t kDerived = 0;  // DecoderConfig: embed_dim / num_heads
  if (family.zero_head_dim_derives && json.has("head_dim") && json.at("head_dim") == 0) return kDerived;
  if (!json.has("head_dim")) {
    if (family.null_head_dim_derives && json.is_null("head_dim")) return kDerived;
    return json.integer("head_dim", family.absent_head_dim, ConfigJsonReader::NullIs::Refused);
  }
  return json.size("head_dim");
}

class FamilyModel final : public ft::nn::DecoderModel {
 public:
  FamilyModel(const DecoderConfig& config, std::shared_ptr<const FamilyHf> family, const ft::Model::Args& args)
      : DecoderModel([&config] { return build_decoder(config); }, args, family->layout),
        config_(config),
        family_(std::move(family)) {}

  std::string hf_config_json() const override { return write_hf_config(config_, *family_, dtype()); }
  bool carried_hf_name(const std::string& name) const override {
    for (const std::string& prefix : family_->carried_prefixes)
      if (name.rfind(prefix, 0) == 0) return true;
    return false;
  }

 private:
  DecoderConfig config_;
  std::shared_ptr<const FamilyHf> family_;
};

}  // namespace

DecoderConfig read_hf_config(const ConfigJsonReader& json, const FamilyHf& family) {
  using NullIs = ConfigJsonReader::NullIs;
  DecoderConfig c;
  if (!family.own_activation) {
    const std::string act = json.string("hidden_act", "silu");
    if (act != "silu") json.fail("hidden_act", "\"" + act + "\" is not supported for " + family.model_type + " (silu)");
  }
  if (json.boolean("mlp_bias", false)) json.fail("mlp_bias", "MLP biases are not supported");
  if (family.qkv_bias) {
    c.qkv_bias = true;
  } else if (json.boolean("attention_bias", false)) {
    json.fail("attention_bias", "attention biases (including o_proj) are not supported for " + family.model_type);
  }
  c.vocab_size = json.size("vocab_size");
  c.embed_dim = json.size("hidden_size");
  c.intermediate_dim = json.size("intermediate_size");
  c.num_layers = json.size("num_hidden_layers");
  c.num_heads = json.size("num_attention_heads");
  c.num_kv_heads = json.size("num_key_value_heads", c.num_heads, NullIs::Default);
  c.head_dim = head_dim_from(json, family);
  c.max_seq_len = json.size("max_position_embeddings");
  c.norm_eps = json.number("rms_norm_eps", family.absent_rms_norm_eps);
  if (!(c.norm_eps > 0)) json.fail("rms_norm_eps", "must be positive");
  c.rope_base = json.number("rope_theta", 10000.0);
  c.tie_word_embeddings = json.boolean("tie_word_embeddings", family.absent_tie_word_embeddings);
  if (json.has("partial_rotary_factor") && json.number("partial_rotary_factor") != 1.0)
    json.fail("partial_rotary_factor", "rotary embeddings over part of a head are not supported");
  if (json.has("rope_scaling")) {
    const auto& scaling = json.at("rope_scaling");
    if (!scaling.is_object()) json.fail("rope_scaling", "expected an object or null");
    const std::string type = scaling.value("rope_type", scaling.value("type", std::string()));
    if (type == "default") {
      // plain RoPE
    } else if (type == "llama3") {
      Llama3RopeScaling s;
      s.factor = scaling.value("factor", s.factor);
      s.low_freq_factor = scaling.value("low_freq_factor", s.low_freq_factor);
      s.high_freq_factor = scaling.value("high_freq_factor", s.high_freq_factor);
      s.original_max_position_embeddings =
          scaling.value("original_max_position_embeddings", s.original_max_position_embeddings);
      c.rope_scaling = s;
    } else {
      json.fail("rope_scaling", "rope_type \"" + type + "\" is not supported (llama3, default)");
    }
  }
  if (family.read_own) family.read_own(json, c);
  if (std::string problem = c.problem(); !problem.empty()) json.fail("config", problem);
  return c;
}

void read_gelu_tanh_activation(const ConfigJsonReader& json, const FamilyHf& family, DecoderConfig& c) {
  const std::string key = json.has("hidden_activation") ? "hidden_activation" : "hidden_act";
  const std::string act = json.string(key, "gelu_pytorch_tanh");
  if (act != "gelu_pytorch_tanh" && !(key == "hidden_act" && act == "gelu"))
    json.fail(key, "\"" + act + "\" is not supported for " + family.model_type + " (gelu_pytorch_tanh)");
  c.activation = MlpActivation::GeluTanh;
}

void read_scaled_geglu_decoder(const ConfigJsonReader& json, const FamilyHf& family, DecoderConfig& c) {
  read_gelu_tanh_activation(json, family, c);
  c.norm_adds_one = true;
  c.scale_embeddings = true;
  if (!c.tie_word_embeddings)
    json.fail("tie_word_embeddings",
              family.model_type + "'s output projection is its embedding; false is not supported");
}

std::string write_hf_config(const DecoderConfig& c, const FamilyHf& family, c10::ScalarType dtype) {
  nlohmann::ordered_json j;
  j["architectures"] = {family.architecture};
  j["model_type"] = family.model_type;
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.embed_dim;
  j["intermediate_size"] = c.intermediate_dim;
  j["num_hidden_layers"] = c.num_layers;
  j["num_attention_heads"] = c.num_heads;
  j["num_key_value_heads"] = c.num_kv_heads;
  j["head_dim"] = c.resolved_head_dim();
  j["hidden_act"] = c.activation == MlpActivation::GeluTanh ? "gelu_pytorch_tanh" : "silu";
  j["max_position_embeddings"] = c.max_seq_len;
  j["rms_norm_eps"] = c.norm_eps;
  j["rope_theta"] = c.rope_base;
  if (c.rope_scaling) {
    j["rope_scaling"] = {{"factor", c.rope_scaling->factor},
                         {"low_freq_factor", c.rope_scaling->low_freq_factor},
                         {"high_freq_factor", c.rope_scaling->high_freq_factor},
                         {"original_max_position_embeddings", c.rope_scaling->original_max_position_embeddings},
                         {"rope_type", "llama3"}};
  } else {
    j["rope_scaling"] = nullptr;
  }
  if (family.write_own) family.write_own(c, j);
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["torch_dtype"] = ft::nn::hf_dtype_name(dtype);
  if (family.text_config_key.empty()) return j.dump(2) + "\n";
  j.erase("architectures");
  j["model_type"] = family.text_model_type;
  nlohmann::ordered_json outer;
  outer["architectures"] = {family.architecture};
  outer["model_type"] = family.model_type;
  outer[family.text_config_key] = j;
  outer["tie_word_embeddings"] = c.tie_word_embeddings;
  outer["torch_dtype"] = ft::nn::hf_dtype_name(dtype);
  return outer.dump(2) + "\n";
}

std::unique_ptr<ft::Model> make_family_model(const DecoderConfig& config, std::shared_ptr<const FamilyHf> family,
                                             const ft::Model::Args& args) {
  return std::make_unique<FamilyModel>(config, std::move(family), args);
}

}  // namespace ft_models
