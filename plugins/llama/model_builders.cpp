// torchtune's model builders: the generic builders of each family taking the architecture as
// keys (llama2, llama3, qwen2, qwen3, mistral, gemma, gemma2, phi3), and the named sizes
// (named_model_sizes.cpp) that take none.
#include "family_model.h"
#include "llama_components.h"
#include "named_model_sizes.h"

#include <ft/config.h>
#include <ft/registry.h>

namespace ft_llama {

namespace {

using ft::ValueType;

std::unique_ptr<ft::Model> build_checked(const ft::ConfigNode& cfg, const DecoderConfig& config,
                                         const ft::Model::Args& args) {
  if (std::string problem = config.problem(); !problem.empty()) cfg.fail("", problem);
  return make_family_model(config, args);
}

void require_no_dropout(const ft::ConfigNode& cfg) {
  if (cfg.get<double>("attn_dropout") != 0.0)
    cfg.fail("attn_dropout", "attention dropout is not supported; use 0.0 (torchtune's finetuning configs do)");
}

ft::Schema common_schema(const std::string& rope_base_default, const std::string& norm_eps_default) {
  ft::Schema s;
  s.required("vocab_size", ValueType::Int, "number of token embeddings")
      .required("num_layers", ValueType::Int, "transformer layers")
      .required("num_heads", ValueType::Int, "query heads")
      .required("num_kv_heads", ValueType::Int, "key/value heads (grouped-query attention)")
      .required("embed_dim", ValueType::Int, "model width")
      .required("max_seq_len", ValueType::Int, "longest sequence the model accepts")
      .optional("head_dim", ValueType::Int, "", "per-head width (default embed_dim / num_heads)")
      .optional("attn_dropout", ValueType::Float, "0.0", "attention dropout (only 0.0)")
      .optional("norm_eps", ValueType::Float, norm_eps_default, "RMSNorm epsilon")
      .optional("rope_base", ValueType::Float, rope_base_default, "RoPE theta")
      .optional("tie_word_embeddings", ValueType::Bool, "false", "output projection shares the embedding");
  return s;
}

DecoderConfig common_config(const ft::ConfigNode& cfg, const std::string& family) {
  DecoderConfig c;
  c.family = family;
  c.vocab_size = cfg.get<std::int64_t>("vocab_size");
  c.num_layers = cfg.get<std::int64_t>("num_layers");
  c.num_heads = cfg.get<std::int64_t>("num_heads");
  c.num_kv_heads = cfg.get<std::int64_t>("num_kv_heads");
  c.embed_dim = cfg.get<std::int64_t>("embed_dim");
  c.max_seq_len = cfg.get<std::int64_t>("max_seq_len");
  c.head_dim = cfg.get<std::int64_t>("head_dim", 0);
  c.norm_eps = cfg.get<double>("norm_eps");
  c.rope_base = cfg.get<double>("rope_base");
  c.tie_word_embeddings = cfg.get<bool>("tie_word_embeddings");
  require_no_dropout(cfg);
  return c;
}

// "8030261248" -> "8,030,261,248"
std::string with_thousands_separators(std::int64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void add_named(ft::Registry& reg, const NamedModelSize& size) {
  const DecoderConfig config = size.config;
  reg.add<ft::Model>(
      size.component, ft::Schema{},
      size.summary + ", " + with_thousands_separators(config.parameter_count()) + " parameters",
      [config](const ft::ConfigNode& cfg, ft::Model::Args args) { return build_checked(cfg, config, args); });
}

}  // namespace

void register_model_builders(ft::Registry& reg) {
  ft::Schema llama3 = common_schema("500000.0", "1e-5");
  llama3.optional("intermediate_dim", ValueType::Int, "", "MLP width (default torchtune's scale_hidden_dim_for_mlp)")
      .optional("scale_factor", ValueType::Float, "", "Llama 3.1 RoPE scaling factor (absent: plain RoPE)")
      .optional("low_freq_factor", ValueType::Float, "1.0", "Llama 3.1 RoPE scaling: low frequency factor")
      .optional("high_freq_factor", ValueType::Float, "4.0", "Llama 3.1 RoPE scaling: high frequency factor")
      .optional("old_context_len", ValueType::Int, "8192", "Llama 3.1 RoPE scaling: original context length");
  reg.add<ft::Model>("torchtune.models.llama3.llama3", llama3, "Llama 3 decoder of any size",
                     [](const ft::ConfigNode& cfg, ft::Model::Args args) {
                       DecoderConfig c = common_config(cfg, "llama");
                       c.intermediate_dim = cfg.get<std::int64_t>("intermediate_dim", 0);
                       if (c.intermediate_dim == 0) c.intermediate_dim = scale_hidden_dim_for_mlp(c.embed_dim);
                       if (auto factor = cfg.get_optional<double>("scale_factor")) {
                         c.rope_scaling = Llama3RopeScaling{*factor, cfg.get<double>("low_freq_factor"),
                                                            cfg.get<double>("high_freq_factor"),
                                                            cfg.get<std::int64_t>("old_context_len")};
                       }
                       return build_checked(cfg, c, args);
                     });

  ft::Schema qwen2 = common_schema("1000000.0", "1e-5");
  qwen2.required("intermediate_dim", ValueType::Int, "MLP width");
  reg.add<ft::Model>("torchtune.models.qwen2.qwen2", qwen2, "Qwen 2 / 2.5 decoder (q/k/v biases) of any size",
                     [](const ft::ConfigNode& cfg, ft::Model::Args args) {
                       DecoderConfig c = common_config(cfg, "qwen2");
                       c.intermediate_dim = cfg.get<std::int64_t>("intermediate_dim");
                       c.qkv_bias = true;
                       return build_checked(cfg, c, args);
                     });

  ft::Schema llama2 = common_schema("10000.0", "1e-5");
  llama2.optional("intermediate_dim", ValueType::Int, "", "MLP width (default torchtune's scale_hidden_dim_for_mlp)");
  reg.add<ft::Model>("torchtune.models.llama2.llama2", llama2, "Llama 2 decoder of any size (plain RoPE)",
                     [](const ft::ConfigNode& cfg, ft::Model::Args args) {
                       DecoderConfig c = common_config(cfg, "llama");
                       c.intermediate_dim = cfg.get<std::int64_t>("intermediate_dim", 0);
                       if (c.intermediate_dim == 0) c.intermediate_dim = scale_hidden_dim_for_mlp(c.embed_dim);
                       return build_checked(cfg, c, args);
                     });

  ft::Schema qwen3 = common_schema("1000000.0", "1e-5");
  qwen3.required("intermediate_dim", ValueType::Int, "MLP width")
      .optional("q_proj_bias", ValueType::Bool, "false", "query projection bias (with k/v: all or none)")
      .optional("k_proj_bias", ValueType::Bool, "false", "key projection bias (with q/v: all or none)")
      .optional("v_proj_bias", ValueType::Bool, "false", "value projection bias (with q/k: all or none)")
      .optional("q_norm", ValueType::Bool, "true", "RMSNorm over each query head (with k_norm: both or neither)")
      .optional("k_norm", ValueType::Bool, "true", "RMSNorm over each key head (with q_norm: both or neither)");
  reg.add<ft::Model>("torchtune.models.qwen3.qwen3", qwen3, "Qwen 3 decoder (per-head q/k norms) of any size",
                     [](const ft::ConfigNode& cfg, ft::Model::Args args) {
                       DecoderConfig c = common_config(cfg, "qwen3");
                       c.intermediate_dim = cfg.get<std::int64_t>("intermediate_dim");
                       const bool q_bias = cfg.get<bool>("q_proj_bias");
                       if (cfg.get<bool>("k_proj_bias") != q_bias || cfg.get<bool>("v_proj_bias") != q_bias)
                         cfg.fail("k_proj_bias",
                                  "q_proj_bias, k_proj_bias and v_proj_bias must be equal (fthost's "
                                  "attention has biases on all three projections or none)");
                       c.qkv_bias = q_bias;
                       c.qk_norm = cfg.get<bool>("q_norm");
                       if (cfg.get<bool>("k_norm") != c.qk_norm)
                         cfg.fail("k_norm", "q_norm and k_norm must be equal (both, as Qwen 3, or neither)");
                       return build_checked(cfg, c, args);
                     });

  // torchtune's mistral and phi3 builders have no sliding window; the key is fthost's, for the
  // checkpoints whose config.json sets one (docs/parity.md).
  for (const char* family : {"mistral", "phi3"}) {
    ft::Schema schema = common_schema("10000.0", "1e-5");
    schema.required("intermediate_dim", ValueType::Int, "MLP width")
        .optional("sliding_window", ValueType::Int, "0",
                  "attend to at most this many positions, itself included, in every layer (0: all; fthost's key)");
    const std::string name = std::string("torchtune.models.") + family + "." + family;
    const std::string summary = std::string(family) == "mistral"
                                    ? "Mistral decoder of any size (grouped-query attention, optional sliding window)"
                                    : "Phi-3 / Phi-4 decoder of any size (fused q/k/v and gate/up in its checkpoints)";
    reg.add<ft::Model>(name, schema, summary,
                       [family = std::string(family)](const ft::ConfigNode& cfg, ft::Model::Args args) {
                         DecoderConfig c = common_config(cfg, family);
                         c.intermediate_dim = cfg.get<std::int64_t>("intermediate_dim");
                         c.sliding_window = cfg.get<std::int64_t>("sliding_window");
                         return build_checked(cfg, c, args);
                       });
  }

  // Gemma and Gemma 2: head_dim is required, the output is always tied to the embedding.
  auto gemma_schema = [] {
    ft::Schema s;
    s.required("vocab_size", ValueType::Int, "number of token embeddings")
        .required("num_layers", ValueType::Int, "transformer layers")
        .required("num_heads", ValueType::Int, "query heads")
        .required("head_dim", ValueType::Int, "per-head width")
        .required("num_kv_heads", ValueType::Int, "key/value heads (grouped-query attention)")
        .required("embed_dim", ValueType::Int, "model width")
        .required("intermediate_dim", ValueType::Int, "MLP width")
        .required("max_seq_len", ValueType::Int, "longest sequence the model accepts")
        .optional("attn_dropout", ValueType::Float, "0.0", "attention dropout (only 0.0)")
        .optional("norm_eps", ValueType::Float, "1e-6", "RMSNorm epsilon")
        .optional("rope_base", ValueType::Float, "10000.0", "RoPE theta");
    return s;
  };
  auto gemma_config = [](const ft::ConfigNode& cfg, const std::string& family) {
    DecoderConfig c;
    c.family = family;
    c.vocab_size = cfg.get<std::int64_t>("vocab_size");
    c.num_layers = cfg.get<std::int64_t>("num_layers");
    c.num_heads = cfg.get<std::int64_t>("num_heads");
    c.head_dim = cfg.get<std::int64_t>("head_dim");
    c.num_kv_heads = cfg.get<std::int64_t>("num_kv_heads");
    c.embed_dim = cfg.get<std::int64_t>("embed_dim");
    c.intermediate_dim = cfg.get<std::int64_t>("intermediate_dim");
    c.max_seq_len = cfg.get<std::int64_t>("max_seq_len");
    c.norm_eps = cfg.get<double>("norm_eps");
    c.rope_base = cfg.get<double>("rope_base");
    c.tie_word_embeddings = true;
    c.norm_adds_one = true;
    c.activation = MlpActivation::GeluTanh;
    c.scale_embeddings = true;
    require_no_dropout(cfg);
    return c;
  };
  reg.add<ft::Model>("torchtune.models.gemma.gemma", gemma_schema(), "Gemma decoder of any size (GeGLU, tied)",
                     [gemma_config](const ft::ConfigNode& cfg, ft::Model::Args args) {
                       return build_checked(cfg, gemma_config(cfg, "gemma"), args);
                     });
  ft::Schema gemma2 = gemma_schema();
  gemma2.optional("hidden_capping_value", ValueType::Float, "50.0", "soft cap of the attention scores")
      .optional("final_capping_value", ValueType::Float, "30.0", "soft cap of the output logits")
      .optional("sliding_window_size", ValueType::Int, "4096", "sliding window of the even-numbered layers")
      .optional("query_pre_attn_scalar", ValueType::Int, "", "scores scaled by 1/sqrt(this) (default head_dim)");
  reg.add<ft::Model>("torchtune.models.gemma2.gemma2", gemma2,
                     "Gemma 2 decoder of any size (soft caps, sliding window on even layers, four norms per layer)",
                     [gemma_config](const ft::ConfigNode& cfg, ft::Model::Args args) {
                       DecoderConfig c = gemma_config(cfg, "gemma2");
                       c.post_norms = true;
                       c.attn_logit_softcap = cfg.get<double>("hidden_capping_value");
                       c.final_logit_softcap = cfg.get<double>("final_capping_value");
                       c.sliding_window = cfg.get<std::int64_t>("sliding_window_size");
                       c.sliding_window_layers = SlidingWindowLayers::EvenIndexed;
                       c.query_pre_attn_scalar = static_cast<double>(cfg.get<std::int64_t>("query_pre_attn_scalar", 0));
                       return build_checked(cfg, c, args);
                     });

  for (const NamedModelSize& size : named_model_sizes()) add_named(reg, size);
}

}  // namespace ft_llama
