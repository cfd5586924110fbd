// torchtune's model builders: the generic llama2 / llama3 / qwen2 builders taking the architecture
// as keys, and the named sizes (named_model_sizes.cpp) that take none.
#include "llama_components.h"
#include "llama_model.h"
#include "named_model_sizes.h"

#include <ft/config.h>
#include <ft/registry.h>

namespace ft_llama {

namespace {

using ft::ValueType;

std::unique_ptr<ft::Model> build_checked(const ft::ConfigNode& cfg, const DecoderConfig& config,
                                         const ft::Model::Args& args) {
  if (std::string problem = config.problem(); !problem.empty()) cfg.fail("", problem);
  return std::make_unique<LlamaFamilyModel>(config, args);
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

  for (const NamedModelSize& size : named_model_sizes()) add_named(reg, size);
}

}  // namespace ft_llama
