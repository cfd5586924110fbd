// Qwen 3: Qwen 2's layout without q/k/v biases, with an RMSNorm over each head's queries and keys
// and 128-wide heads at every size. torchtune's qwen3 builder and named sizes, the config.json of
// model_type "qwen3", its tensor-parallel plan, and the Qwen 3 tokenizer of a model directory.
#include "megatron_plan.h"
#include "torchtune_builders.h"

#include <ft/model_family.h>
#include <ft/plugin.h>

namespace {

using namespace ft_models;

std::shared_ptr<const FamilyHf> qwen3_hf() {
  auto f = std::make_shared<FamilyHf>();
  f->model_type = "qwen3";
  f->architecture = "Qwen3ForCausalLM";
  f->absent_head_dim = 128;  // Qwen3Config's default
  f->read_own = [](const ConfigJsonReader& json, DecoderConfig& c) {
    c.qk_norm = true;
    if (json.boolean("use_sliding_window", false))
      json.fail("use_sliding_window", "Qwen's sliding-window attention (max_window_layers) is not supported");
  };
  f->write_own = [](const DecoderConfig& c, nlohmann::ordered_json& j) {
    j["attention_bias"] = c.qkv_bias;
    j["use_sliding_window"] = false;
  };
  return f;
}

// 128-wide heads at every size (wider than embed_dim / num_heads for 0.6B, 4B and 32B).
DecoderConfig qwen3_sized(std::int64_t layers, std::int64_t heads, std::int64_t dim, std::int64_t hidden,
                          std::int64_t max_seq_len, bool tied) {
  DecoderConfig c;
  c.vocab_size = 151936;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = 8;
  c.embed_dim = dim;
  c.head_dim = 128;
  c.intermediate_dim = hidden;
  c.max_seq_len = max_seq_len;
  c.norm_eps = 1e-6;
  c.rope_base = 1000000.0;
  c.qk_norm = true;
  c.tie_word_embeddings = tied;
  return c;
}

std::vector<NamedModelSize> named_sizes() {
  const std::string q3 = "torchtune.models.qwen3.";
  return {
      {q3 + "qwen3_0_6b_base", "Qwen 3 0.6B base (tied)", qwen3_sized(28, 16, 1024, 3072, 32768, true)},
      {q3 + "qwen3_0_6b_instruct", "Qwen 3 0.6B (tied)", qwen3_sized(28, 16, 1024, 3072, 40960, true)},
      {q3 + "qwen3_1_7b_base", "Qwen 3 1.7B base (tied)", qwen3_sized(28, 16, 2048, 6144, 32768, true)},
      {q3 + "qwen3_1_7b_instruct", "Qwen 3 1.7B (tied)", qwen3_sized(28, 16, 2048, 6144, 40960, true)},
      {q3 + "qwen3_4b_base", "Qwen 3 4B base (tied)", qwen3_sized(36, 32, 2560, 9728, 32768, true)},
      {q3 + "qwen3_4b_instruct", "Qwen 3 4B (tied)", qwen3_sized(36, 32, 2560, 9728, 40960, true)},
      {q3 + "qwen3_8b_base", "Qwen 3 8B base", qwen3_sized(36, 32, 4096, 12288, 32768, false)},
      {q3 + "qwen3_8b_instruct", "Qwen 3 8B", qwen3_sized(36, 32, 4096, 12288, 40960, false)},
      {q3 + "qwen3_14b_base", "Qwen 3 14B base", qwen3_sized(40, 40, 5120, 17408, 32768, false)},
      {q3 + "qwen3_14b_instruct", "Qwen 3 14B", qwen3_sized(40, 40, 5120, 17408, 40960, false)},
      {q3 + "qwen3_32b", "Qwen 3 32B", qwen3_sized(64, 64, 5120, 25600, 40960, false)},
  };
}

void register_components(ft::Registry& reg) {
  const auto hf = qwen3_hf();
  using ft::ValueType;
  ft::Schema qwen3 = common_schema("1000000.0", "1e-5");
  qwen3.required("intermediate_dim", ValueType::Int, "MLP width")
      .optional("q_proj_bias", ValueType::Bool, "false", "query projection bias (with k/v: all or none)")
      .optional("k_proj_bias", ValueType::Bool, "false", "key projection bias (with q/v: all or none)")
      .optional("v_proj_bias", ValueType::Bool, "false", "value projection bias (with q/k: all or none)")
      .optional("q_norm", ValueType::Bool, "true", "RMSNorm over each query head (with k_norm: both or neither)")
      .optional("k_norm", ValueType::Bool, "true", "RMSNorm over each key head (with q_norm: both or neither)");
  reg.add<ft::Model>("torchtune.models.qwen3.qwen3", qwen3, "Qwen 3 decoder (per-head q/k norms) of any size",
                     [hf](const ft::ConfigNode& cfg, ft::Model::Args args) {
                       DecoderConfig c = common_config(cfg);
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
                       return build_checked(cfg, c, hf, args);
                     });
  register_named_sizes(reg, named_sizes(), hf);
  register_hf_config_builder(reg, "fthost.models.qwen3.from_hf_config",
                             "a Qwen 3 architecture read from a Hugging Face config.json", hf);
  // torchtune's Qwen 3 plan splits the same modules (its q/k norms stay whole, as here).
  register_megatron_plan(reg, "torchtune.models.qwen3.tp_plan",
                         "Qwen 3's plan: the same Megatron split as base_llama_tp_plan");

  register_family(reg,
                  {"qwen3",
                   {"qwen3"},
                   {"Qwen3ForCausalLM"},
                   {"QWEN3"},
                   "fthost.models.qwen3.from_hf_config",
                   tokenizer_by_model_type("qwen3", "torchtune.models.qwen3.qwen3_tokenizer", {"tokenizer.json"})});
}

}  // namespace

FT_PLUGIN("ft_model_qwen3", "0.1.0", register_components)
