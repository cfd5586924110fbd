// What the mixture-of-experts families share: their config.json's expert keys checked, the
// sparse-layer patterns Hugging Face's configuration classes define, and the checkpoint names of
// experts stored one tensor per expert.
#pragma once

#include "config_json_reader.h"
#include "decoder_config.h"

#include <ft/model.h>
#include <ft/nn/feed_forward_block.h>
#include <ft/nn/mixture_of_experts.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ft_models {

// Refuses config.json keys of mixture-of-experts designs no family here computes (DeepSeek's
// grouped routing and low-rank attention, router noise, expert biases), naming the key.
void refuse_unimplemented_expert_keys(const ConfigJsonReader& json, const std::string& model_type);

// The number of experts (under `experts_key`, num_experts or num_local_experts) and
// num_experts_per_tok, with Hugging Face's defaults; more per token than there are is refused.
void read_expert_counts(const ConfigJsonReader& json, const std::string& experts_key, std::int64_t default_experts,
                        std::int64_t default_top_k, ExpertLayers& experts);

// A list of layer indices (mlp_only_layers, moe_layers), each checked against the layer count.
std::vector<std::int64_t> layer_list(const ConfigJsonReader& json, const std::string& field, std::int64_t num_layers);

// The block of a sparse layer, or nullptr for a dense one.
ft::nn::MixtureOfExpertsImpl* experts_of(ft::nn::FeedForwardBlockImpl& block);

// Experts stored one tensor per expert and projection ("{prefix}experts.{i}.{gate}.weight"):
// each a view of that expert's slice of the stacked parameter.
struct PerExpertNames {
  std::string gate, up, down;  // Qwen3-MoE: gate_proj, up_proj, down_proj; Mixtral: w1, w3, w2
};
void add_per_expert_names(ft::nn::MixtureOfExpertsImpl& moe, const std::string& prefix, const PerExpertNames& names,
                          std::vector<ft::NamedTensor>& out);

// Experts stored stacked and transposed ([experts, in, out]), gate and up side by side in one
// tensor (Llama 4: {prefix}experts.gate_up_proj, {prefix}experts.down_proj).
void add_stacked_expert_names(ft::nn::MixtureOfExpertsImpl& moe, const std::string& prefix,
                              std::vector<ft::NamedTensor>& out);

// Writes the expert keys every family's config.json shares.
void write_router_loss_keys(const DecoderConfig& c, nlohmann::ordered_json& j);
// Reads output_router_logits and router_aux_loss_coef: the loss's weight when the logits are
// output (Hugging Face adds the loss only then), else 0.
void read_router_loss_keys(const ConfigJsonReader& json, DecoderConfig& c);

}  // namespace ft_models
