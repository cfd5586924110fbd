// fthost.models.from_hf_config: the architecture read from a Hugging Face config.json, so a
// model directory needs no hand-written model table.
#include "family_model.h"
#include "llama_components.h"

#include <ft/config.h>
#include <ft/registry.h>

#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include <fstream>

namespace ft_llama {

namespace {

class ConfigJsonReader {
 public:
  ConfigJsonReader(const ft::ConfigNode& cfg, std::string path) : cfg_(cfg), path_(std::move(path)) {
    std::ifstream in(path_);
    if (!in) cfg_.fail("path", "cannot read " + path_);
    try {
      json_ = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      cfg_.fail("path", path_ + ": not valid JSON: " + e.what());
    }
    if (!json_.is_object()) cfg_.fail("path", path_ + ": expected a JSON object");
  }

  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    cfg_.fail("path", path_ + ": \"" + field + "\": " + message);
  }
  // Present with a value other than null.
  bool has(const std::string& field) const { return json_.contains(field) && !json_[field].is_null(); }
  bool is_null(const std::string& field) const { return json_.contains(field) && json_[field].is_null(); }
  const nlohmann::json& at(const std::string& field) const { return json_[field]; }

  // A key absent from config.json takes `fallback` (nullopt: required). A key written as null
  // takes the fallback only where Hugging Face's configuration class turns None into that
  // default (NullIs::Default); elsewhere Hugging Face would compute with None, so it is refused.
  enum class NullIs { Refused, Default };

  std::int64_t integer(const std::string& field, std::optional<std::int64_t> fallback = std::nullopt,
                       NullIs null = NullIs::Refused) const {
    if (!usable(field, fallback.has_value(), null, "an integer")) return *fallback;
    const nlohmann::json& value = json_[field];
    if (!value.is_number_integer()) fail(field, "expected an integer, got " + value.dump());
    if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(kLargestSize))
      fail(field, value.dump() + " is out of range (at most " + std::to_string(kLargestSize) + ")");
    return value.get<std::int64_t>();
  }
  // A size: a positive integer no larger than kLargestSize.
  std::int64_t size(const std::string& field, std::optional<std::int64_t> fallback = std::nullopt,
                    NullIs null = NullIs::Refused) const {
    const std::int64_t value = integer(field, fallback, null);
    if (value <= 0 || value > kLargestSize)
      fail(field,
           "expected a positive integer of at most " + std::to_string(kLargestSize) + ", got " + std::to_string(value));
    return value;
  }
  double number(const std::string& field, std::optional<double> fallback = std::nullopt,
                NullIs null = NullIs::Refused) const {
    if (!usable(field, fallback.has_value(), null, "a number")) return *fallback;
    if (!json_[field].is_number()) fail(field, "expected a number, got " + json_[field].dump());
    return json_[field].get<double>();
  }
  bool boolean(const std::string& field, bool fallback, NullIs null = NullIs::Refused) const {
    if (!usable(field, true, null, "true or false")) return fallback;
    if (!json_[field].is_boolean()) fail(field, "expected true or false, got " + json_[field].dump());
    return json_[field].get<bool>();
  }
  std::string string(const std::string& field, const std::string& fallback, NullIs null = NullIs::Refused) const {
    if (!usable(field, true, null, "a string")) return fallback;
    if (!json_[field].is_string()) fail(field, "expected a string, got " + json_[field].dump());
    return json_[field].get<std::string>();
  }

  // Tensor dimensions beyond 2^31 - 1 are no model's: a larger value is a damaged file.
  static constexpr std::int64_t kLargestSize = 2147483647;

 private:
  // Whether `field` has a value to read: false where the fallback applies.
  bool usable(const std::string& field, bool has_fallback, NullIs null, const char* expected) const {
    if (!json_.contains(field)) {
      if (!has_fallback) fail(field, "required, missing");
      return false;
    }
    if (!json_[field].is_null()) return true;
    if (null == NullIs::Default && has_fallback) return false;
    fail(field, std::string("null is not valid here: expected ") + expected);
  }

  const ft::ConfigNode& cfg_;
  std::string path_;
  nlohmann::json json_;
};

const char* const kSupported = "llama, mistral, qwen2, qwen3, gemma, gemma2, phi3";

// Architectures whose config.json names them but which are no decoder of this plugin's kind.
std::string unsupported_architecture(const std::string& model_type) {
  if (model_type == "mllama" || model_type == "llama4" || model_type == "qwen2_vl" || model_type == "gemma3")
    return "multimodal models are not supported";
  if (model_type == "qwen3_moe" || model_type == "mixtral" || model_type == "llama4_text" || model_type == "qwen2_moe")
    return "mixture-of-experts models are not supported";
  return "not a supported architecture";
}

MlpActivation activation_from(const ConfigJsonReader& json, const std::string& family) {
  const bool gemma = family == "gemma" || family == "gemma2";
  // Gemma's config.json may say "gelu" in hidden_act; Hugging Face computes the tanh approximation
  // unless hidden_activation says otherwise, and so does fthost.
  const std::string key = gemma && json.has("hidden_activation") ? "hidden_activation" : "hidden_act";
  const std::string act = json.string(key, gemma ? "gelu_pytorch_tanh" : "silu");
  if (gemma && (act == "gelu_pytorch_tanh" || (key == "hidden_act" && act == "gelu"))) return MlpActivation::GeluTanh;
  if (!gemma && act == "silu") return MlpActivation::SiLU;
  json.fail(key,
            "\"" + act + "\" is not supported for " + family + " (" + (gemma ? "gelu_pytorch_tanh" : "silu") + ")");
}

// head_dim as each family's Hugging Face configuration class and attention read it: Llama and
// Mistral derive it from hidden_size / num_attention_heads when it is null (Mistral also when it
// is 0); Qwen 3 defaults to 128 and Gemma to 256 when it is absent; Qwen 2 and Phi-3 derive it
// when absent and use whatever is written. A value that is used must be a positive size.
std::int64_t head_dim_from(const ConfigJsonReader& json, const std::string& model_type) {
  using NullIs = ConfigJsonReader::NullIs;
  constexpr std::int64_t kDerived = 0;  // DecoderConfig: embed_dim / num_heads
  const bool derives_null = model_type == "llama" || model_type == "mistral";
  if (model_type == "mistral" && json.has("head_dim") && json.at("head_dim") == 0) return kDerived;
  std::int64_t absent = kDerived;
  if (model_type == "qwen3") absent = 128;
  if (model_type == "gemma" || model_type == "gemma2") absent = 256;
  if (!json.has("head_dim")) {
    if (derives_null) return kDerived;
    return json.integer("head_dim", absent, NullIs::Refused);  // absent: the default; null: refused
  }
  return json.size("head_dim");
}

DecoderConfig decoder_config_from(const ConfigJsonReader& json) {
  const std::string model_type = json.string("model_type", "");
  DecoderConfig c;
  c.family = model_type;
  if (model_type != "llama" && model_type != "mistral" && model_type != "qwen2" && model_type != "qwen3" &&
      model_type != "gemma" && model_type != "gemma2" && model_type != "phi3")
    json.fail("model_type",
              "\"" + model_type + "\": " + unsupported_architecture(model_type) + " (supported: " + kSupported + ")");
  const bool gemma = model_type == "gemma" || model_type == "gemma2";
  c.activation = activation_from(json, model_type);
  if (json.boolean("mlp_bias", false)) json.fail("mlp_bias", "MLP biases are not supported");
  if (model_type == "qwen2") {
    c.qkv_bias = true;
  } else if (json.boolean("attention_bias", false)) {
    json.fail("attention_bias", "attention biases (including o_proj) are not supported for " + model_type);
  }
  using NullIs = ConfigJsonReader::NullIs;
  c.vocab_size = json.size("vocab_size");
  c.embed_dim = json.size("hidden_size");
  c.intermediate_dim = json.size("intermediate_size");
  c.num_layers = json.size("num_hidden_layers");
  c.num_heads = json.size("num_attention_heads");
  c.num_kv_heads = json.size("num_key_value_heads", c.num_heads, NullIs::Default);
  c.head_dim = head_dim_from(json, model_type);
  c.max_seq_len = json.size("max_position_embeddings");
  c.norm_eps = json.number("rms_norm_eps", model_type == "phi3" ? 1e-5 : 1e-6);
  if (!(c.norm_eps > 0)) json.fail("rms_norm_eps", "must be positive");
  c.rope_base = json.number("rope_theta", 10000.0);
  c.tie_word_embeddings = json.boolean("tie_word_embeddings", gemma);
  if (gemma && !c.tie_word_embeddings)
    json.fail("tie_word_embeddings", "Gemma's output projection is its embedding; false is not supported");
  if (json.has("partial_rotary_factor") && json.number("partial_rotary_factor") != 1.0)
    json.fail("partial_rotary_factor", "rotary embeddings over part of a head are not supported");
  c.qk_norm = model_type == "qwen3";
  if (gemma) {
    c.norm_adds_one = true;
    c.scale_embeddings = true;
  }
  // Sliding windows: Mistral and Phi-3 on every layer when set, Gemma 2 on the even-numbered
  // layers; Qwen's own (use_sliding_window) is refused.
  if ((model_type == "qwen2" || model_type == "qwen3") && json.boolean("use_sliding_window", false))
    json.fail("use_sliding_window", "Qwen's sliding-window attention (max_window_layers) is not supported");
  if (model_type == "mistral" || model_type == "phi3")
    c.sliding_window = json.integer("sliding_window", 0, ConfigJsonReader::NullIs::Default);  // null: none
  if (model_type == "llama" && json.has("sliding_window"))
    json.fail("sliding_window", "Llama has no sliding window; remove the key or set model_type mistral");
  if (model_type == "gemma2") {
    c.post_norms = true;
    // Soft caps: null means none in Hugging Face's Gemma 2; an absent one takes its defaults.
    c.attn_logit_softcap = json.number("attn_logit_softcapping", 50.0, ConfigJsonReader::NullIs::Default);
    c.final_logit_softcap = json.number("final_logit_softcapping", 30.0, ConfigJsonReader::NullIs::Default);
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
  if (std::string problem = c.problem(); !problem.empty()) json.fail("config", problem);
  return c;
}

}  // namespace

void register_hf_config_builder(ft::Registry& reg) {
  ft::Schema s;
  s.required("path", ft::ValueType::String, "a Hugging Face config.json, or the model directory holding it");
  reg.add<ft::Model>("fthost.models.from_hf_config", s,
                     "a Llama, Mistral, Qwen 2/3, Gemma, Gemma 2 or Phi-3/4 architecture read from a Hugging Face "
                     "config.json",
                     [](const ft::ConfigNode& cfg, ft::Model::Args args) {
                       std::string path = cfg.get<std::string>("path");
                       if (boost::filesystem::is_directory(path)) path += "/config.json";
                       ConfigJsonReader json(cfg, path);
                       return make_family_model(decoder_config_from(json), args);
                     });
}

}  // namespace ft_llama
