// Llama 2: torchtune's llama2 builder and named sizes (plain RoPE with theta 10000, a 32k
// SentencePiece vocabulary) and the Llama 2 tokenizer of a model directory. Its checkpoints'
// config.json (model_type "llama") reads through the llama3 family's reader.
#include "torchtune_builders.h"

#include <ft/model_family.h>
#include <ft/plugin.h>

namespace {

using namespace ft_models;

std::shared_ptr<const FamilyHf> llama2_hf() {
  auto f = std::make_shared<FamilyHf>();
  f->model_type = "llama";
  f->architecture = "LlamaForCausalLM";
  f->write_own = [](const DecoderConfig& c, nlohmann::ordered_json& j) {
    j["attention_bias"] = c.qkv_bias;
    j["mlp_bias"] = false;
  };
  return f;
}

DecoderConfig llama2_sized(std::int64_t layers, std::int64_t heads, std::int64_t dim, std::int64_t hidden) {
  DecoderConfig c;
  c.vocab_size = 32000;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = heads;  // multi-head attention at 7B and 13B
  c.embed_dim = dim;
  c.intermediate_dim = hidden;
  c.max_seq_len = 4096;
  c.norm_eps = 1e-5;
  c.rope_base = 10000.0;
  return c;
}

void register_components(ft::Registry& reg) {
  const auto hf = llama2_hf();
  ft::Schema llama2 = common_schema("10000.0", "1e-5");
  llama2.optional("intermediate_dim", ft::ValueType::Int, "",
                  "MLP width (default torchtune's scale_hidden_dim_for_mlp)");
  reg.add<ft::Model>("torchtune.models.llama2.llama2", llama2, "Llama 2 decoder of any size (plain RoPE)",
                     [hf](const ft::ConfigNode& cfg, ft::Model::Args args) {
                       DecoderConfig c = common_config(cfg);
                       c.intermediate_dim = cfg.get<std::int64_t>("intermediate_dim", 0);
                       if (c.intermediate_dim == 0) c.intermediate_dim = scale_hidden_dim_for_mlp(c.embed_dim);
                       return build_checked(cfg, c, hf, args);
                     });
  register_named_sizes(reg,
                       {{"torchtune.models.llama2.llama2_7b", "Llama 2 7B (multi-head attention, RoPE theta 10000)",
                         llama2_sized(32, 32, 4096, 11008)},
                        {"torchtune.models.llama2.llama2_13b", "Llama 2 13B (multi-head attention, RoPE theta 10000)",
                         llama2_sized(40, 40, 5120, 13824)}},
                       hf);

  // A SentencePiece tokenizer.json (<s>, </s>, neither Llama 3's nor ChatML's tokens), or a
  // tokenizer.model alone. Its config.json (model_type "llama") is the llama3 family's to read.
  register_family(reg, {"llama2",
                        {},
                        {"LlamaForCausalLM"},
                        {"LLAMA2"},
                        "",
                        [](const ft::ModelDirectory& dir) -> std::optional<ft::TokenizerChoice> {
                          const char* component = "torchtune.models.llama2.llama2_tokenizer";
                          if (dir.has_file("tokenizer.json")) {
                            if (dir.has_added_token("<s>") && dir.has_added_token("</s>") &&
                                !dir.has_added_token("<|begin_of_text|>") && !dir.has_added_token("<|im_start|>"))
                              return ft::TokenizerChoice{component, dir.file("tokenizer.json"), "path", ""};
                            return std::nullopt;
                          }
                          if (dir.has_file("tokenizer.model"))
                            return ft::TokenizerChoice{component, dir.file("tokenizer.model"), "path", ""};
                          return std::nullopt;
                        }});
}

}  // namespace

FT_PLUGIN("ft_model_llama2", "0.1.0", register_components)
