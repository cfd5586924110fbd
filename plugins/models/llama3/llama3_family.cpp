// Llama 3, 3.1, 3.2 and 3.3 (Hugging Face model_type "llama"): torchtune's llama3 builder and
// named sizes, the config.json of model_type "llama" (Llama 2's checkpoints read through it too:
// the same decoder with plain RoPE), Llama 3.1's RoPE scaling, base_llama_tp_plan, and the
// Llama 3 tokenizer of a model directory.
#include "megatron_plan.h"
#include "torchtune_builders.h"

#include <ft/model_family.h>
#include <ft/plugin.h>

namespace {

using namespace ft_models;

std::shared_ptr<const FamilyHf> llama_hf() {
  auto f = std::make_shared<FamilyHf>();
  f->model_type = "llama";
  f->architecture = "LlamaForCausalLM";
  f->null_head_dim_derives = true;  // LlamaConfig: head_dim None -> hidden_size / num_attention_heads
  f->read_own = [](const ConfigJsonReader& json, DecoderConfig&) {
    if (json.has("sliding_window"))
      json.fail("sliding_window", "Llama has no sliding window; remove the key or set model_type mistral");
  };
  f->write_own = [](const DecoderConfig& c, nlohmann::ordered_json& j) {
    j["attention_bias"] = c.qkv_bias;
    j["mlp_bias"] = false;
  };
  return f;
}

// 128k tiktoken vocabulary, 8 key/value heads, RoPE theta 500000; 3.1 and later add the
// frequency-dependent RoPE scaling (`scale_factor`) and 128k positions.
DecoderConfig llama3_sized(std::int64_t layers, std::int64_t heads, std::int64_t dim, std::int64_t hidden,
                           std::int64_t max_seq_len, std::optional<double> scale_factor, bool tied) {
  DecoderConfig c;
  c.vocab_size = 128256;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = 8;
  c.embed_dim = dim;
  c.intermediate_dim = hidden;
  c.max_seq_len = max_seq_len;
  c.norm_eps = 1e-5;
  c.rope_base = 500000.0;
  if (scale_factor) c.rope_scaling = Llama3RopeScaling{*scale_factor, 1.0, 4.0, 8192};
  c.tie_word_embeddings = tied;
  return c;
}

std::vector<NamedModelSize> named_sizes() {
  return {
      {"torchtune.models.llama3.llama3_8b", "Llama 3 8B (plain RoPE, 8192 positions)",
       llama3_sized(32, 32, 4096, 14336, 8192, std::nullopt, false)},
      {"torchtune.models.llama3_1.llama3_1_8b", "Llama 3.1 8B (RoPE scale 8)",
       llama3_sized(32, 32, 4096, 14336, 131072, 8.0, false)},
      {"torchtune.models.llama3_2.llama3_2_1b", "Llama 3.2 1B (tied, RoPE scale 32)",
       llama3_sized(16, 32, 2048, 8192, 131072, 32.0, true)},
      {"torchtune.models.llama3_2.llama3_2_3b", "Llama 3.2 3B (tied, RoPE scale 32)",
       llama3_sized(28, 24, 3072, 8192, 131072, 32.0, true)},
      {"torchtune.models.llama3.llama3_70b", "Llama 3 70B (plain RoPE, 8192 positions)",
       llama3_sized(80, 64, 8192, 28672, 8192, std::nullopt, false)},
      {"torchtune.models.llama3_1.llama3_1_70b", "Llama 3.1 70B (RoPE scale 8)",
       llama3_sized(80, 64, 8192, 28672, 131072, 8.0, false)},
      {"torchtune.models.llama3_3.llama3_3_70b", "Llama 3.3 70B (Llama 3.1 70B's architecture)",
       llama3_sized(80, 64, 8192, 28672, 131072, 8.0, false)},
  };
}

void register_components(ft::Registry& reg) {
  const auto hf = llama_hf();
  ft::Schema llama3 = common_schema("500000.0", "1e-5");
  llama3
      .optional("intermediate_dim", ft::ValueType::Int, "", "MLP width (default torchtune's scale_hidden_dim_for_mlp)")
      .optional("scale_factor", ft::ValueType::Float, "", "Llama 3.1 RoPE scaling factor (absent: plain RoPE)")
      .optional("low_freq_factor", ft::ValueType::Float, "1.0", "Llama 3.1 RoPE scaling: low frequency factor")
      .optional("high_freq_factor", ft::ValueType::Float, "4.0", "Llama 3.1 RoPE scaling: high frequency factor")
      .optional("old_context_len", ft::ValueType::Int, "8192", "Llama 3.1 RoPE scaling: original context length");
  reg.add<ft::Model>("torchtune.models.llama3.llama3", llama3, "Llama 3 decoder of any size",
                     [hf](const ft::ConfigNode& cfg, ft::Model::Args args) {
                       DecoderConfig c = common_config(cfg);
                       c.intermediate_dim = cfg.get<std::int64_t>("intermediate_dim", 0);
                       if (c.intermediate_dim == 0) c.intermediate_dim = scale_hidden_dim_for_mlp(c.embed_dim);
                       if (auto factor = cfg.get_optional<double>("scale_factor")) {
                         c.rope_scaling = Llama3RopeScaling{*factor, cfg.get<double>("low_freq_factor"),
                                                            cfg.get<double>("high_freq_factor"),
                                                            cfg.get<std::int64_t>("old_context_len")};
                       }
                       return build_checked(cfg, c, hf, args);
                     });
  register_named_sizes(reg, named_sizes(), hf);
  register_hf_config_builder(reg, "fthost.models.llama3.from_hf_config",
                             "a Llama (2, 3, 3.1, 3.2, 3.3) architecture read from a Hugging Face config.json", hf);
  register_megatron_plan(
      reg, "torchtune.models.llama3.base_llama_tp_plan",
      "Megatron plan of every fthost decoder: q/k/v, w1/w3, output colwise; output_proj, w2, tok_embeddings rowwise");

  register_family(
      reg,
      {"llama3",
       {"llama"},
       {"LlamaForCausalLM"},
       {"LLAMA3", "LLAMA3_2"},
       "fthost.models.llama3.from_hf_config",
       [](const ft::ModelDirectory& dir) -> std::optional<ft::TokenizerChoice> {
         if (!dir.has_added_token("<|begin_of_text|>")) return std::nullopt;
         return ft::TokenizerChoice{"torchtune.models.llama3.llama3_tokenizer", dir.file("tokenizer.json"), "path", ""};
       }});
}

}  // namespace

FT_PLUGIN("ft_model_llama3", "0.1.0", register_components)
