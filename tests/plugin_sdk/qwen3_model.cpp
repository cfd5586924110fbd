// A third-party model family: Qwen 3, read from a Hugging Face model directory and built from
// ft::nn's blocks. The family is a DecoderConfig (what Qwen 3 is: Llama's decoder plus an RMSNorm
// over each query and key head) and the config.json it saves; ft::nn::DecoderModel does the rest
// (forward, Hugging Face parameter names, sharding, activation checkpointing, tensor parallelism,
// the KV cache).
#include <ft/config.h>
#include <ft/nn/decoder_model.h>
#include <ft/plugin.h>

#include <nlohmann/json.hpp>

#include <fstream>

namespace {

using nlohmann::json;

// Qwen 3's architecture from its config.json. Throws json::exception on a missing or mistyped key.
ft::nn::DecoderConfig qwen3_config(const json& hf) {
  ft::nn::DecoderConfig c;
  c.family = "qwen3";
  c.vocab_size = hf.at("vocab_size");
  c.num_layers = hf.at("num_hidden_layers");
  c.num_heads = hf.at("num_attention_heads");
  c.num_kv_heads = hf.at("num_key_value_heads");
  c.embed_dim = hf.at("hidden_size");
  c.head_dim = hf.at("head_dim");  // Qwen 3's is its own, not hidden_size / num_attention_heads
  c.intermediate_dim = hf.at("intermediate_size");
  c.max_seq_len = hf.at("max_position_embeddings");
  c.norm_eps = hf.at("rms_norm_eps");
  c.rope_base = hf.at("rope_theta");
  c.tie_word_embeddings = hf.value("tie_word_embeddings", false);
  c.qk_norm = true;    // q_norm / k_norm: an RMSNorm over each head's features, before RoPE
  c.qkv_bias = false;  // attention_bias (refused when true below)
  return c;
}

// What this plugin does not build, named instead of silently trained as something else.
std::string unsupported(const json& hf) {
  if (hf.value("model_type", "") != "qwen3") return "model_type is not \"qwen3\"";
  if (hf.value("attention_bias", false)) return "attention_bias: biases are not supported";
  if (hf.value("use_sliding_window", false)) return "use_sliding_window: sliding windows are not supported";
  if (hf.contains("rope_scaling") && !hf["rope_scaling"].is_null()) return "rope_scaling is not supported";
  if (hf.value("hidden_act", "silu") != "silu") return "hidden_act: only silu";
  return "";
}

class Qwen3Model final : public ft::nn::DecoderModel {
 public:
  using DecoderModel::DecoderModel;

  // Saved next to each checkpoint: transformers' AutoModel loads the result as Qwen3ForCausalLM.
  std::string hf_config_json() const override {
    const ft::nn::DecoderConfig& c = config();
    nlohmann::ordered_json j;
    j["architectures"] = nlohmann::ordered_json::array({"Qwen3ForCausalLM"});
    j["model_type"] = "qwen3";
    j["vocab_size"] = c.vocab_size;
    j["hidden_size"] = c.embed_dim;
    j["intermediate_size"] = c.intermediate_dim;
    j["num_hidden_layers"] = c.num_layers;
    j["num_attention_heads"] = c.num_heads;
    j["num_key_value_heads"] = c.num_kv_heads;
    j["head_dim"] = c.resolved_head_dim();
    j["hidden_act"] = "silu";
    j["max_position_embeddings"] = c.max_seq_len;
    j["rms_norm_eps"] = c.norm_eps;
    j["rope_theta"] = c.rope_base;
    j["rope_scaling"] = nullptr;
    j["attention_bias"] = false;
    j["use_sliding_window"] = false;
    j["tie_word_embeddings"] = c.tie_word_embeddings;
    j["torch_dtype"] = ft::nn::hf_dtype_name(dtype());
    return j.dump(2) + "\n";
  }
};

void register_components(ft::Registry& reg) {
  ft::Schema s;
  s.required("path", ft::ValueType::String, "a Hugging Face Qwen 3 model directory (its config.json)");
  reg.add<ft::Model>("acme.models.qwen3", s, "Qwen 3 decoder read from a Hugging Face config.json",
                     [](const ft::ConfigNode& cfg, ft::Model::Args args) -> std::unique_ptr<ft::Model> {
                       const std::string path = cfg.get<std::string>("path") + "/config.json";
                       std::ifstream in(path);
                       if (!in) cfg.fail("path", "cannot read " + path);
                       ft::nn::DecoderConfig config;
                       try {
                         const json hf = json::parse(in);
                         if (std::string why = unsupported(hf); !why.empty()) cfg.fail("path", path + ": " + why);
                         config = qwen3_config(hf);
                       } catch (const json::exception& e) {
                         cfg.fail("path", path + ": " + e.what());
                       }
                       if (std::string problem = config.problem(); !problem.empty()) cfg.fail("path", problem);
                       return std::make_unique<Qwen3Model>(config, args);
                     });
}

}  // namespace

FT_PLUGIN("acme_qwen3", "1.0.0", register_components)
