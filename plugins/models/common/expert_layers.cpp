#include "expert_layers.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace ft_models {

void refuse_unimplemented_expert_keys(const ConfigJsonReader& json, const std::string& model_type) {
  static const char* const kUnimplemented[] = {"n_group",
                                               "topk_group",
                                               "q_lora_rank",
                                               "kv_lora_rank",
                                               "n_routed_experts",
                                               "n_shared_experts",
                                               "routed_scaling_factor",
                                               "first_k_dense_replace",
                                               "moe_layer_freq",
                                               "topk_method",
                                               "scoring_func",
                                               "ep_size",
                                               "qk_rope_head_dim",
                                               "qk_nope_head_dim",
                                               "v_head_dim"};
  for (const char* key : kUnimplemented)
    if (json.has(key))
      json.fail(key, "is a key of a mixture-of-experts design fthost does not implement for " + model_type +
                         " (DeepSeek's grouped routing or low-rank attention); remove it only if the checkpoint does "
                         "not use it");
  if (json.has("router_jitter_noise") && json.number("router_jitter_noise") != 0)
    json.fail("router_jitter_noise", "router noise in training is not supported (0 only)");
}

void read_expert_counts(const ConfigJsonReader& json, const std::string& experts_key, std::int64_t default_experts,
                        std::int64_t default_top_k, ExpertLayers& experts) {
  experts.num_experts = json.size(experts_key, default_experts);
  experts.top_k = json.size("num_experts_per_tok", default_top_k);
  if (experts.top_k > experts.num_experts)
    json.fail("num_experts_per_tok", std::to_string(experts.top_k) + " experts per token, but " + experts_key + " is " +
                                         std::to_string(experts.num_experts));
}

std::vector<std::int64_t> layer_list(const ConfigJsonReader& json, const std::string& field, std::int64_t num_layers) {
  std::vector<std::int64_t> layers;
  if (!json.has(field)) return layers;
  const auto& value = json.at(field);
  if (!value.is_array()) json.fail(field, "expected a list of layer indices, got " + value.dump());
  for (const auto& item : value) {
    if (!item.is_number_integer() || item.get<std::int64_t>() < 0 || item.get<std::int64_t>() >= num_layers)
      json.fail(field, "expected layer indices in [0, " + std::to_string(num_layers) + "), got " + item.dump());
    layers.push_back(item.get<std::int64_t>());
  }
  return layers;
}

ft::nn::MixtureOfExpertsImpl* experts_of(ft::nn::FeedForwardBlockImpl& block) {
  return dynamic_cast<ft::nn::MixtureOfExpertsImpl*>(&block);
}

void add_per_expert_names(ft::nn::MixtureOfExpertsImpl& moe, const std::string& prefix, const PerExpertNames& names,
                          std::vector<ft::NamedTensor>& out) {
  const auto& e = *moe.experts;
  for (std::int64_t i = 0; i < e.num_experts(); ++i) {
    const std::string p = prefix + "experts." + std::to_string(i) + ".";
    out.push_back({p + names.gate + ".weight", e.w1[i]});
    out.push_back({p + names.up + ".weight", e.w3[i]});
    out.push_back({p + names.down + ".weight", e.w2[i]});
  }
}

void add_stacked_expert_names(ft::nn::MixtureOfExpertsImpl& moe, const std::string& prefix,
                              std::vector<ft::NamedTensor>& out) {
  const auto& e = *moe.experts;
  const auto swap_last_two = [](const at::Tensor& t) { return t.transpose(-2, -1); };
  // Live [experts, hidden, dim] gate and up, side by side along hidden, are the checkpoint's
  // [experts, dim, 2 * hidden] transposed.
  ft::NamedTensor gate_up(prefix + "experts.gate_up_proj", at::Tensor(), {e.w1, e.w3}, 1);
  gate_up.to_checkpoint = swap_last_two;
  gate_up.from_checkpoint = swap_last_two;
  out.push_back(std::move(gate_up));
  ft::NamedTensor down(prefix + "experts.down_proj", e.w2);
  down.to_checkpoint = swap_last_two;
  down.from_checkpoint = swap_last_two;
  out.push_back(std::move(down));
}

void write_router_loss_keys(const DecoderConfig& c, nlohmann::ordered_json& j) {
  j["output_router_logits"] = c.experts.router_aux_loss_coef > 0;
  j["router_aux_loss_coef"] = c.experts.router_aux_loss_coef > 0 ? c.experts.router_aux_loss_coef : 0.001;
}

void read_router_loss_keys(const ConfigJsonReader& json, DecoderConfig& c) {
  const double coefficient = json.number("router_aux_loss_coef", 0.001);
  if (coefficient < 0) json.fail("router_aux_loss_coef", "must not be negative");
  c.experts.router_aux_loss_coef = json.boolean("output_router_logits", false) ? coefficient : 0;
}

}  // namespace ft_models
