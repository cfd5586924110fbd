#include "family_model.h"
#include "decoder_builder.h"

#include <ft/errors.h>
#include <ft/nn/decoder_model.h>

#include <nlohmann/json.hpp>

namespace ft_llama {

namespace {

// The architectures entry of config.json, which Hugging Face's AutoModel dispatches on.
std::string architecture(const std::string& family) {
  if (family == "llama") return "LlamaForCausalLM";
  if (family == "mistral") return "MistralForCausalLM";
  if (family == "qwen2") return "Qwen2ForCausalLM";
  if (family == "qwen3") return "Qwen3ForCausalLM";
  if (family == "gemma") return "GemmaForCausalLM";
  if (family == "gemma2") return "Gemma2ForCausalLM";
  if (family == "phi3") return "Phi3ForCausalLM";
  throw ft::Error("model: no Hugging Face architecture for family \"" + family + "\"");
}

class FamilyModel final : public ft::nn::DecoderModel {
 public:
  FamilyModel(const DecoderConfig& config, const ft::Model::Args& args)
      : DecoderModel([&config] { return build_decoder(config); }, args,
                     ft::nn::HfLayout{config.family == "phi3", config.family == "phi3"}),
        config_(config) {}

  std::string hf_config_json() const override {
    const DecoderConfig& c = config_;
    nlohmann::ordered_json j;
    j["architectures"] = {architecture(c.family)};
    j["model_type"] = c.family;
    j["vocab_size"] = c.vocab_size;
    j["hidden_size"] = c.embed_dim;
    j["intermediate_size"] = c.intermediate_dim;
    j["num_hidden_layers"] = c.num_layers;
    j["num_attention_heads"] = c.num_heads;
    j["num_key_value_heads"] = c.num_kv_heads;
    j["head_dim"] = c.resolved_head_dim();
    const bool gelu = c.activation == ft::nn::MlpActivation::GeluTanh;
    j["hidden_act"] = gelu ? "gelu_pytorch_tanh" : "silu";
    if (gelu) j["hidden_activation"] = "gelu_pytorch_tanh";
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
    if (c.family == "llama" || c.family == "qwen3" || c.family == "gemma" || c.family == "gemma2") {
      j["attention_bias"] = c.qkv_bias;
    }
    if (c.family == "llama") j["mlp_bias"] = false;
    if (c.family == "mistral" || c.family == "phi3") {
      j["sliding_window"] = c.sliding_window > 0 ? nlohmann::ordered_json(c.sliding_window) : nullptr;
    }
    if (c.family == "qwen2" || c.family == "qwen3") j["use_sliding_window"] = false;
    if (c.family == "gemma2") {
      j["sliding_window"] = c.sliding_window;
      j["attn_logit_softcapping"] = c.attn_logit_softcap > 0 ? nlohmann::ordered_json(c.attn_logit_softcap) : nullptr;
      j["final_logit_softcapping"] =
          c.final_logit_softcap > 0 ? nlohmann::ordered_json(c.final_logit_softcap) : nullptr;
      j["query_pre_attn_scalar"] =
          c.query_pre_attn_scalar > 0 ? c.query_pre_attn_scalar : static_cast<double>(c.resolved_head_dim());
    }
    j["tie_word_embeddings"] = c.tie_word_embeddings;
    j["torch_dtype"] = ft::nn::hf_dtype_name(dtype());
    return j.dump(2) + "\n";
  }

 private:
  DecoderConfig config_;
};

}  // namespace

std::unique_ptr<ft::Model> make_family_model(const DecoderConfig& config, const ft::Model::Args& args) {
  architecture(config.family);  // an unknown family fails before any allocation
  return std::make_unique<FamilyModel>(config, args);
}

}  // namespace ft_llama
