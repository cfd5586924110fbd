// Mixtral: Mistral's decoder with a mixture of experts on every layer: a softmax router choosing
// num_experts_per_tok of num_local_experts, the k weights always renormalised, each expert a
// SwiGLU MLP of intermediate_size. The config.json of model_type "mixtral", Mixtral 8x7B and
// 8x22B, and the Mistral tokenizer of a model directory.
#include "expert_layers.h"
#include "megatron_plan.h"
#include "torchtune_builders.h"

#include <ft/model_family.h>
#include <ft/plugin.h>

namespace {

using namespace ft_models;

std::shared_ptr<const FamilyHf> mixtral_hf() {
  auto f = std::make_shared<FamilyHf>();
  f->model_type = "mixtral";
  f->architecture = "MixtralForCausalLM";
  f->absent_rms_norm_eps = 1e-5;
  // MixtralAttention reads `head_dim or hidden_size // num_attention_heads`: null and 0 both derive.
  f->null_head_dim_derives = true;
  f->zero_head_dim_derives = true;
  f->layout.feed_forward_names = [](std::int64_t layer, ft::nn::FeedForwardBlockImpl& block, const std::string& prefix,
                                    std::vector<ft::NamedTensor>& out) {
    auto* moe = experts_of(block);
    if (!moe) throw ft::Error("layer " + std::to_string(layer) + ": every Mixtral layer is a mixture of experts");
    out.push_back({prefix + "block_sparse_moe.gate.weight", moe->router->gate->weight});
    add_per_expert_names(*moe, prefix + "block_sparse_moe.", {"w1", "w3", "w2"}, out);
  };
  f->read_own = [](const ConfigJsonReader& json, DecoderConfig& c) {
    c.sliding_window = json.integer("sliding_window", 0, ConfigJsonReader::NullIs::Default);  // null: none
    refuse_unimplemented_expert_keys(json, "mixtral");
    ExpertLayers& e = c.experts;
    read_expert_counts(json, "num_local_experts", 8, 2, e);
    e.expert_dim = c.intermediate_dim;
    e.normalize_top_k = true;
    e.score = RouterScore::Softmax;
    e.sparse.assign(static_cast<std::size_t>(c.num_layers), true);
    read_router_loss_keys(json, c);
  };
  f->write_own = [](const DecoderConfig& c, nlohmann::ordered_json& j) {
    j["sliding_window"] = c.sliding_window > 0 ? nlohmann::ordered_json(c.sliding_window) : nullptr;
    j["num_local_experts"] = c.experts.num_experts;
    j["num_experts_per_tok"] = c.experts.top_k;
    j["router_jitter_noise"] = 0.0;
    write_router_loss_keys(c, j);
  };
  return f;
}

DecoderConfig mixtral_sized(std::int64_t vocab, std::int64_t layers, std::int64_t heads, std::int64_t dim,
                            std::int64_t hidden, std::int64_t max_seq_len) {
  DecoderConfig c;
  c.vocab_size = vocab;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = 8;
  c.embed_dim = dim;
  c.intermediate_dim = hidden;
  c.max_seq_len = max_seq_len;
  c.norm_eps = 1e-5;
  c.rope_base = 1000000.0;
  c.experts.num_experts = 8;
  c.experts.top_k = 2;
  c.experts.expert_dim = hidden;
  c.experts.normalize_top_k = true;
  c.experts.sparse.assign(static_cast<std::size_t>(layers), true);
  return c;
}

void register_components(ft::Registry& reg) {
  const auto hf = mixtral_hf();
  register_named_sizes(reg,
                       {{"fthost.models.mixtral.mixtral_8x7b", "Mixtral 8x7B (8 experts, 2 per token)",
                         mixtral_sized(32000, 32, 32, 4096, 14336, 32768)},
                        {"fthost.models.mixtral.mixtral_8x22b", "Mixtral 8x22B (8 experts, 2 per token)",
                         mixtral_sized(32768, 56, 48, 6144, 16384, 65536)}},
                       hf);
  register_hf_config_builder(reg, "fthost.models.mixtral.from_hf_config",
                             "a Mixtral architecture read from a Hugging Face config.json", hf);
  register_expert_plan(
      reg, "fthost.models.mixtral.tp_plan",
      "Mixtral's plan: attention in the Megatron layout, the experts' hidden features split, routers whole");
  register_family(reg, {"mixtral",
                        {"mixtral"},
                        {"MixtralForCausalLM"},
                        {"MIXTRAL"},
                        "fthost.models.mixtral.from_hf_config",
                        tokenizer_by_model_type("mixtral", "torchtune.models.mistral.mistral_tokenizer",
                                                {"tokenizer.model", "tokenizer.json"})});
}

}  // namespace

FT_PLUGIN("ft_model_mixtral", "0.1.0", register_components)
