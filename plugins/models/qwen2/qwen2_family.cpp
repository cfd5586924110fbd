// Qwen 2 and Qwen 2.5 (one architecture: q/k/v biases, RoPE theta 1e6, RMSNorm eps 1e-6):
// torchtune's qwen2 builder and named sizes, the config.json of model_type "qwen2", and the
// ChatML (Qwen 2.5) tokenizer of a model directory.
#include "torchtune_builders.h"

#include <ft/model_family.h>
#include <ft/plugin.h>

namespace {

using namespace ft_models;

std::shared_ptr<const FamilyHf> qwen2_hf() {
  auto f = std::make_shared<FamilyHf>();
  f->model_type = "qwen2";
  f->architecture = "Qwen2ForCausalLM";
  f->qkv_bias = true;
  f->read_own = [](const ConfigJsonReader& json, DecoderConfig&) {
    if (json.boolean("use_sliding_window", false))
      json.fail("use_sliding_window", "Qwen's sliding-window attention (max_window_layers) is not supported");
  };
  f->write_own = [](const DecoderConfig&, nlohmann::ordered_json& j) { j["use_sliding_window"] = false; };
  return f;
}

// The small sizes tie the output to the embedding; the 7B sizes have a 152064-entry vocabulary.
DecoderConfig qwen2_sized(std::int64_t vocab, std::int64_t layers, std::int64_t heads, std::int64_t kv_heads,
                          std::int64_t dim, std::int64_t hidden, std::int64_t max_seq_len, bool tied) {
  DecoderConfig c;
  c.vocab_size = vocab;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.embed_dim = dim;
  c.intermediate_dim = hidden;
  c.max_seq_len = max_seq_len;
  c.norm_eps = 1e-6;
  c.rope_base = 1000000.0;
  c.qkv_bias = true;
  c.tie_word_embeddings = tied;
  return c;
}

std::vector<NamedModelSize> named_sizes() {
  const DecoderConfig qwen_0_5b = qwen2_sized(151936, 24, 14, 2, 896, 4864, 32768, true);
  const DecoderConfig qwen_1_5b = qwen2_sized(151936, 28, 12, 2, 1536, 8960, 32768, true);
  const DecoderConfig qwen_7b = qwen2_sized(152064, 28, 28, 4, 3584, 18944, 32768, false);
  DecoderConfig qwen_1_5b_base = qwen_1_5b;
  qwen_1_5b_base.max_seq_len = 131072;
  DecoderConfig qwen_7b_base = qwen_7b;
  qwen_7b_base.max_seq_len = 131072;
  const std::string q = "torchtune.models.qwen2.", q25 = "torchtune.models.qwen2_5.";
  return {
      {q + "qwen2_0_5b", "Qwen 2 0.5B (tied)", qwen_0_5b},
      {q + "qwen2_1_5b", "Qwen 2 1.5B (tied)", qwen_1_5b},
      {q + "qwen2_7b", "Qwen 2 7B", qwen_7b},
      {q25 + "qwen2_5_0_5b", "Qwen 2.5 0.5B (tied)", qwen_0_5b},
      {q25 + "qwen2_5_1_5b", "Qwen 2.5 1.5B Instruct (tied; fthost's name for qwen2_5_1_5b_instruct)", qwen_1_5b},
      {q25 + "qwen2_5_1_5b_base", "Qwen 2.5 1.5B base (tied, 131072 positions)", qwen_1_5b_base},
      {q25 + "qwen2_5_1_5b_instruct", "Qwen 2.5 1.5B Instruct (tied)", qwen_1_5b},
      {q25 + "qwen2_5_3b", "Qwen 2.5 3B (tied)", qwen2_sized(151936, 36, 16, 2, 2048, 11008, 32768, true)},
      {q25 + "qwen2_5_7b_base", "Qwen 2.5 7B base (131072 positions)", qwen_7b_base},
      {q25 + "qwen2_5_7b_instruct", "Qwen 2.5 7B Instruct", qwen_7b},
  };
}

void register_components(ft::Registry& reg) {
  const auto hf = qwen2_hf();
  ft::Schema qwen2 = common_schema("1000000.0", "1e-5");
  qwen2.required("intermediate_dim", ft::ValueType::Int, "MLP width");
  reg.add<ft::Model>("torchtune.models.qwen2.qwen2", qwen2, "Qwen 2 / 2.5 decoder (q/k/v biases) of any size",
                     [hf](const ft::ConfigNode& cfg, ft::Model::Args args) {
                       DecoderConfig c = common_config(cfg);
                       c.intermediate_dim = cfg.get<std::int64_t>("intermediate_dim");
                       c.qkv_bias = true;
                       return build_checked(cfg, c, hf, args);
                     });
  register_named_sizes(reg, named_sizes(), hf);
  register_hf_config_builder(reg, "fthost.models.qwen2.from_hf_config",
                             "a Qwen 2 / 2.5 architecture read from a Hugging Face config.json", hf);

  // A ChatML tokenizer.json (<|im_start|>) that is not Llama 3's.
  register_family(reg, {"qwen2",
                        {"qwen2"},
                        {"Qwen2ForCausalLM"},
                        {"QWEN2", "QWEN2_5"},
                        "fthost.models.qwen2.from_hf_config",
                        [](const ft::ModelDirectory& dir) -> std::optional<ft::TokenizerChoice> {
                          if (!dir.has_added_token("<|im_start|>") || dir.has_added_token("<|begin_of_text|>"))
                            return std::nullopt;
                          return ft::TokenizerChoice{"torchtune.models.qwen2_5.qwen2_5_tokenizer",
                                                     dir.file("tokenizer.json"), "path", ""};
                        }});
}

}  // namespace

FT_PLUGIN("ft_model_qwen2", "0.1.0", register_components)
