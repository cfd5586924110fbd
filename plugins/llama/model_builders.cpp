// torchtune's model builders: the generic llama3 / qwen2 builders taking the architecture as
// keys, and the named sizes that take none.
#include "llama_components.h"
#include "llama_model.h"

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

// Named sizes, as torchtune's builders define them.
DecoderConfig llama3_sized(std::int64_t layers, std::int64_t heads, std::int64_t dim, std::int64_t hidden,
                           double scale_factor, bool tied) {
  DecoderConfig c;
  c.family = "llama";
  c.vocab_size = 128256;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = 8;
  c.embed_dim = dim;
  c.intermediate_dim = hidden;
  c.max_seq_len = 131072;
  c.norm_eps = 1e-5;
  c.rope_base = 500000.0;
  c.rope_scaling = Llama3RopeScaling{scale_factor, 1.0, 4.0, 8192};
  c.tie_word_embeddings = tied;
  return c;
}

DecoderConfig qwen2_5_sized(std::int64_t layers, std::int64_t heads, std::int64_t dim, std::int64_t hidden) {
  DecoderConfig c;
  c.family = "qwen2";
  c.vocab_size = 151936;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = 2;
  c.embed_dim = dim;
  c.intermediate_dim = hidden;
  c.max_seq_len = 32768;
  c.norm_eps = 1e-6;
  c.rope_base = 1000000.0;
  c.qkv_bias = true;
  c.tie_word_embeddings = true;
  return c;
}

void add_named(ft::Registry& reg, const std::string& name, const std::string& summary, DecoderConfig config) {
  reg.add<ft::Model>(name, ft::Schema{}, summary, [config](const ft::ConfigNode& cfg, ft::Model::Args args) {
    return build_checked(cfg, config, args);
  });
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

  add_named(reg, "torchtune.models.llama3_2.llama3_2_1b", "Llama 3.2 1B (tied, RoPE scale 32)",
            llama3_sized(16, 32, 2048, 8192, 32.0, true));
  add_named(reg, "torchtune.models.llama3_2.llama3_2_3b", "Llama 3.2 3B (tied, RoPE scale 32)",
            llama3_sized(28, 24, 3072, 8192, 32.0, true));
  add_named(reg, "torchtune.models.llama3_1.llama3_1_8b", "Llama 3.1 8B (RoPE scale 8)",
            llama3_sized(32, 32, 4096, 14336, 8.0, false));
  add_named(reg, "torchtune.models.qwen2_5.qwen2_5_0_5b", "Qwen 2.5 0.5B", qwen2_5_sized(24, 14, 896, 4864));
  for (const char* name : {"torchtune.models.qwen2_5.qwen2_5_1_5b", "torchtune.models.qwen2_5.qwen2_5_1_5b_base",
                           "torchtune.models.qwen2_5.qwen2_5_1_5b_instruct"})
    add_named(reg, name, "Qwen 2.5 1.5B", qwen2_5_sized(28, 12, 1536, 8960));
}

}  // namespace ft_llama
