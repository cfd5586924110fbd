// fthost.models.from_hf_config: the architecture read from a Hugging Face config.json, so a
// model directory needs no hand-written model table.
#include "llama_components.h"
#include "llama_model.h"

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

DecoderConfig decoder_config_from(const ConfigJsonReader& json) {
  const std::string model_type = json.string("model_type", "");
  DecoderConfig c;
  if (model_type == "llama" || model_type == "mistral") {
    c.family = "llama";
  } else if (model_type == "qwen2") {
    c.family = "qwen2";
    c.qkv_bias = true;
  } else {
    json.fail("model_type", "\"" + model_type + "\" is not a supported architecture (llama, mistral, qwen2)");
  }
  if (json.string("hidden_act", "silu") != "silu") json.fail("hidden_act", "only \"silu\" (SwiGLU) is supported");
  if (json.boolean("mlp_bias", false)) json.fail("mlp_bias", "MLP biases are not supported");
  if (c.family == "llama" && json.boolean("attention_bias", false))
    json.fail("attention_bias", "Llama attention biases (including o_proj) are not supported");
  if (json.boolean("use_sliding_window", false))
    json.fail("use_sliding_window", "sliding-window attention is not supported");
  if (json.has("sliding_window") && c.family == "llama" && model_type == "mistral")
    json.fail("sliding_window", "Mistral sliding-window attention is not supported");
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
  c.tie_word_embeddings = json.boolean("tie_word_embeddings", false);
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
                     "Llama / Mistral / Qwen2 architecture read from a Hugging Face config.json",
                     [](const ft::ConfigNode& cfg, ft::Model::Args args) {
                       std::string path = cfg.get<std::string>("path");
                       if (boost::filesystem::is_directory(path)) path += "/config.json";
                       ConfigJsonReader json(cfg, path);
                       return std::make_unique<LlamaFamilyModel>(decoder_config_from(json), args);
                     });
}

}  // namespace ft_llama
