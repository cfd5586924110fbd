// Qwen3-MoE: Qwen 3's attention (per-head q/k RMSNorms, no biases) with a mixture of experts in
// place of the MLP: a softmax router choosing num_experts_per_tok of num_experts, the k weights
// renormalised when norm_topk_prob is set, no shared expert. Dense layers where
// decoder_sparse_step and mlp_only_layers say. The config.json of model_type "qwen3_moe", the
// sizes Qwen publishes, and the Qwen 3 tokenizer of a model directory.
#include "expert_layers.h"
#include "megatron_plan.h"
#include "torchtune_builders.h"

#include <ft/model_family.h>
#include <ft/plugin.h>

#include <algorithm>

namespace {

using namespace ft_models;

// Hugging Face's rule: layer i is sparse unless it is in mlp_only_layers, when num_experts > 0
// and (i + 1) is a multiple of decoder_sparse_step.
std::vector<bool> qwen_sparse_layers(std::int64_t num_layers, std::int64_t step,
                                     const std::vector<std::int64_t>& dense) {
  std::vector<bool> sparse(static_cast<std::size_t>(num_layers));
  for (std::int64_t i = 0; i < num_layers; ++i)
    sparse[static_cast<std::size_t>(i)] =
        (i + 1) % step == 0 && std::find(dense.begin(), dense.end(), i) == dense.end();
  return sparse;
}

std::shared_ptr<const FamilyHf> qwen3_moe_hf() {
  auto f = std::make_shared<FamilyHf>();
  f->model_type = "qwen3_moe";
  f->architecture = "Qwen3MoeForCausalLM";
  f->absent_head_dim = 0;  // Qwen3MoeConfig has no head_dim of its own: hidden_size / heads
  f->layout.feed_forward_names = [](std::int64_t, ft::nn::FeedForwardBlockImpl& block, const std::string& prefix,
                                    std::vector<ft::NamedTensor>& out) {
    auto* moe = experts_of(block);
    if (!moe) return ft::nn::dense_mlp_names(block, prefix, "mlp", false, out);
    add_per_expert_names(*moe, prefix + "mlp.", {"gate_proj", "up_proj", "down_proj"}, out);
    out.push_back({prefix + "mlp.gate.weight", moe->router->gate->weight});
  };
  f->read_own = [](const ConfigJsonReader& json, DecoderConfig& c) {
    c.qk_norm = true;
    if (json.boolean("use_sliding_window", false))
      json.fail("use_sliding_window", "Qwen's sliding-window attention (max_window_layers) is not supported");
    refuse_unimplemented_expert_keys(json, "qwen3_moe");
    ExpertLayers& e = c.experts;
    read_expert_counts(json, "num_experts", 128, 8, e);
    e.expert_dim = json.size("moe_intermediate_size", 768);
    e.normalize_top_k = json.boolean("norm_topk_prob", false);
    e.score = RouterScore::Softmax;
    const std::int64_t step = json.size("decoder_sparse_step", 1);
    e.sparse = qwen_sparse_layers(c.num_layers, step, layer_list(json, "mlp_only_layers", c.num_layers));
    read_router_loss_keys(json, c);
  };
  f->write_own = [](const DecoderConfig& c, nlohmann::ordered_json& j) {
    j["attention_bias"] = false;
    j["use_sliding_window"] = false;
    j["num_experts"] = c.experts.num_experts;
    j["num_experts_per_tok"] = c.experts.top_k;
    j["moe_intermediate_size"] = c.experts.expert_dim;
    j["norm_topk_prob"] = c.experts.normalize_top_k;
    j["decoder_sparse_step"] = 1;
    std::vector<std::int64_t> dense;
    for (std::int64_t i = 0; i < c.num_layers; ++i)
      if (!c.layer_has_experts(i)) dense.push_back(i);
    j["mlp_only_layers"] = dense;
    write_router_loss_keys(c, j);
  };
  return f;
}

DecoderConfig qwen3_moe_sized(std::int64_t layers, std::int64_t heads, std::int64_t dim, std::int64_t dense_hidden,
                              std::int64_t expert_hidden) {
  DecoderConfig c;
  c.vocab_size = 151936;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = 4;
  c.embed_dim = dim;
  c.head_dim = 128;
  c.intermediate_dim = dense_hidden;
  c.max_seq_len = 40960;
  c.norm_eps = 1e-6;
  c.rope_base = 1000000.0;
  c.qk_norm = true;
  c.experts.num_experts = 128;
  c.experts.top_k = 8;
  c.experts.expert_dim = expert_hidden;
  c.experts.normalize_top_k = true;
  c.experts.sparse.assign(static_cast<std::size_t>(layers), true);
  return c;
}

void register_components(ft::Registry& reg) {
  const auto hf = qwen3_moe_hf();
  register_named_sizes(reg,
                       {{"fthost.models.qwen3_moe.qwen3_30b_a3b", "Qwen3-30B-A3B (128 experts, 8 per token)",
                         qwen3_moe_sized(48, 32, 2048, 6144, 768)},
                        {"fthost.models.qwen3_moe.qwen3_235b_a22b", "Qwen3-235B-A22B (128 experts, 8 per token)",
                         qwen3_moe_sized(94, 64, 4096, 12288, 1536)}},
                       hf);
  register_hf_config_builder(reg, "fthost.models.qwen3_moe.from_hf_config",
                             "a Qwen3-MoE architecture read from a Hugging Face config.json", hf);
  register_expert_plan(reg, "fthost.models.qwen3_moe.tp_plan",
                       "Qwen3-MoE's plan: attention and dense MLPs in the Megatron layout, the experts' hidden "
                       "features split, routers whole");
  register_family(reg,
                  {"qwen3_moe",
                   {"qwen3_moe"},
                   {"Qwen3MoeForCausalLM"},
                   {"QWEN3_MOE"},
                   "fthost.models.qwen3_moe.from_hf_config",
                   tokenizer_by_model_type("qwen3_moe", "torchtune.models.qwen3.qwen3_tokenizer", {"tokenizer.json"})});
}

}  // namespace

FT_PLUGIN("ft_model_qwen3_moe", "0.1.0", register_components)
