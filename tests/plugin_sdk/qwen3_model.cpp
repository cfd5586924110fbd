// A third-party model family: Qwen 3, read from a Hugging Face model directory and composed from
// ft::nn's blocks: Llama's pre-norm decoder whose attention gets an RMSNorm over each query and
// key head. ft::nn::DecoderModel does the rest (forward, Hugging Face parameter names, sharding,
// activation checkpointing, tensor parallelism, the KV cache).
#include <ft/config.h>
#include <ft/nn/decoder_model.h>
#include <ft/nn/feed_forward.h>
#include <ft/nn/rms_norm.h>
#include <ft/nn/rotary_embedding.h>
#include <ft/plugin.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <vector>

namespace {

using nlohmann::json;

// Qwen 3's architecture, as its config.json states it.
struct Qwen3Config {
  std::int64_t vocab_size, num_layers, num_heads, num_kv_heads, embed_dim, head_dim, intermediate_dim, max_seq_len;
  double norm_eps, rope_base;
  bool tie_word_embeddings;
};

// Throws json::exception on a missing or mistyped key.
Qwen3Config qwen3_config(const json& hf) {
  Qwen3Config c;
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
  return c;
}

ft::nn::TransformerDecoder build_qwen3(const Qwen3Config& c) {
  using namespace ft::nn;
  const auto rope = rotary_embedding(c.head_dim, c.rope_base);
  std::vector<TransformerLayer> layers;
  for (std::int64_t i = 0; i < c.num_layers; ++i) {
    AttentionOptions attention;
    attention.embed_dim = c.embed_dim;
    attention.num_heads = c.num_heads;
    attention.num_kv_heads = c.num_kv_heads;
    attention.head_dim = c.head_dim;
    TransformerLayerParts parts;
    parts.sa_norm = rms_norm(c.embed_dim, c.norm_eps);
    // q_norm / k_norm: an RMSNorm over each head's features, before RoPE.
    parts.attn =
        Attention(attention, AttentionBlocks{rope, rms_norm(c.head_dim, c.norm_eps), rms_norm(c.head_dim, c.norm_eps)});
    parts.mlp_norm = rms_norm(c.embed_dim, c.norm_eps);
    parts.mlp = feed_forward(c.embed_dim, c.intermediate_dim);
    layers.emplace_back(std::move(parts));
  }
  DecoderOptions options;
  options.vocab_size = c.vocab_size;
  options.embed_dim = c.embed_dim;
  options.max_seq_len = c.max_seq_len;
  options.tie_word_embeddings = c.tie_word_embeddings;
  return TransformerDecoder(options, std::move(layers), rms_norm(c.embed_dim, c.norm_eps));
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
  Qwen3Model(const Qwen3Config& config, const ft::Model::Args& args)
      : DecoderModel([&config] { return build_qwen3(config); }, args), config_(config) {}

  // Saved next to each checkpoint: transformers' AutoModel loads the result as Qwen3ForCausalLM.
  std::string hf_config_json() const override {
    const Qwen3Config& c = config_;
    nlohmann::ordered_json j;
    j["architectures"] = nlohmann::ordered_json::array({"Qwen3ForCausalLM"});
    j["model_type"] = "qwen3";
    j["vocab_size"] = c.vocab_size;
    j["hidden_size"] = c.embed_dim;
    j["intermediate_size"] = c.intermediate_dim;
    j["num_hidden_layers"] = c.num_layers;
    j["num_attention_heads"] = c.num_heads;
    j["num_key_value_heads"] = c.num_kv_heads;
    j["head_dim"] = c.head_dim;
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

 private:
  Qwen3Config config_;
};

void register_components(ft::Registry& reg) {
  ft::Schema s;
  s.required("path", ft::ValueType::String, "a Hugging Face Qwen 3 model directory (its config.json)");
  reg.add<ft::Model>("acme.models.qwen3", s, "Qwen 3 decoder read from a Hugging Face config.json",
                     [](const ft::ConfigNode& cfg, ft::Model::Args args) -> std::unique_ptr<ft::Model> {
                       const std::string path = cfg.get<std::string>("path") + "/config.json";
                       std::ifstream in(path);
                       if (!in) cfg.fail("path", "cannot read " + path);
                       Qwen3Config config{};
                       try {
                         const json hf = json::parse(in);
                         if (std::string why = unsupported(hf); !why.empty()) cfg.fail("path", path + ": " + why);
                         config = qwen3_config(hf);
                       } catch (const json::exception& e) {
                         cfg.fail("path", path + ": " + e.what());
                       }
                       try {
                         return std::make_unique<Qwen3Model>(config, args);
                       } catch (const ft::Error& e) {
                         cfg.fail("path", path + ": " + e.what());  // sizes the blocks refuse
                       }
                     });
}

}  // namespace

FT_PLUGIN("acme_qwen3", "1.0.0", register_components)
