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
  bool has(const std::string& field) const { return json_.contains(field) && !json_[field].is_null(); }
  const nlohmann::json& at(const std::string& field) const { return json_[field]; }

  std::int64_t integer(const std::string& field, std::optional<std::int64_t> fallback = std::nullopt) const {
    if (!has(field)) {
      if (fallback) return *fallback;
      fail(field, "required, missing");
    }
    if (!json_[field].is_number_integer()) fail(field, "expected an integer, got " + json_[field].dump());
    return json_[field].get<std::int64_t>();
  }
  double number(const std::string& field, std::optional<double> fallback = std::nullopt) const {
    if (!has(field)) {
      if (fallback) return *fallback;
      fail(field, "required, missing");
    }
    if (!json_[field].is_number()) fail(field, "expected a number, got " + json_[field].dump());
    return json_[field].get<double>();
  }
  bool boolean(const std::string& field, bool fallback) const {
    if (!has(field)) return fallback;
    if (!json_[field].is_boolean()) fail(field, "expected true or false, got " + json_[field].dump());
    return json_[field].get<bool>();
  }
  std::string string(const std::string& field, const std::string& fallback) const {
    if (!has(field)) return fallback;
    if (!json_[field].is_string()) fail(field, "expected a string, got " + json_[field].dump());
    return json_[field].get<std::string>();
  }

 private:
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

ft::nn::MlpActivation activation_from(const ConfigJsonReader& json, const std::string& family) {
  const bool gemma = family == "gemma" || family == "gemma2";
  // Gemma's config.json may say "gelu" in hidden_act; Hugging Face computes the tanh approximation
  // unless hidden_activation says otherwise, and so does fthost.
  const std::string key = gemma && json.has("hidden_activation") ? "hidden_activation" : "hidden_act";
  const std::string act = json.string(key, gemma ? "gelu_pytorch_tanh" : "silu");
  if (gemma && (act == "gelu_pytorch_tanh" || (key == "hidden_act" && act == "gelu")))
    return ft::nn::MlpActivation::GeluTanh;
  if (!gemma && act == "silu") return ft::nn::MlpActivation::SiLU;
  json.fail(key,
            "\"" + act + "\" is not supported for " + family + " (" + (gemma ? "gelu_pytorch_tanh" : "silu") + ")");
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
  c.vocab_size = json.integer("vocab_size");
  c.embed_dim = json.integer("hidden_size");
  c.intermediate_dim = json.integer("intermediate_size");
  c.num_layers = json.integer("num_hidden_layers");
  c.num_heads = json.integer("num_attention_heads");
  c.num_kv_heads = json.integer("num_key_value_heads", c.num_heads);
  c.head_dim = json.integer("head_dim", 0);
  c.max_seq_len = json.integer("max_position_embeddings");
  c.norm_eps = json.number("rms_norm_eps", 1e-6);
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
  if (model_type == "mistral" || model_type == "phi3") c.sliding_window = json.integer("sliding_window", 0);
  if (model_type == "llama" && json.has("sliding_window"))
    json.fail("sliding_window", "Llama has no sliding window; remove the key or set model_type mistral");
  if (model_type == "gemma2") {
    c.post_norms = true;
    c.attn_logit_softcap = json.number("attn_logit_softcapping", 0.0);
    c.final_logit_softcap = json.number("final_logit_softcapping", 0.0);
    c.query_pre_attn_scalar = json.number("query_pre_attn_scalar", 0.0);
    c.sliding_window = json.integer("sliding_window", 4096);
    c.sliding_window_layers = ft::nn::SlidingWindowLayers::EvenIndexed;
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
      ft::nn::Llama3RopeScaling s;
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
