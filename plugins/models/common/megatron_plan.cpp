#include "megatron_plan.h"

#include <ft/config.h>

#include <utility>

namespace ft_models {

namespace {

using ft::ParallelStyle;

std::vector<ft::ModuleParallelism> layer_projections() {
  return {{"layers.*.attn.q_proj", ParallelStyle::Colwise}, {"layers.*.attn.k_proj", ParallelStyle::Colwise},
          {"layers.*.attn.v_proj", ParallelStyle::Colwise}, {"layers.*.attn.output_proj", ParallelStyle::Rowwise},
          {"layers.*.mlp.w1", ParallelStyle::Colwise},      {"layers.*.mlp.w2", ParallelStyle::Rowwise},
          {"layers.*.mlp.w3", ParallelStyle::Colwise}};
}

std::vector<ft::ModuleParallelism> training_plan() {
  std::vector<ft::ModuleParallelism> plan{{"tok_embeddings", ParallelStyle::Rowwise},
                                          {"norm", ParallelStyle::SequenceParallel},
                                          {"output", ParallelStyle::Colwise},
                                          {"layers.*.attn", ParallelStyle::PrepareModuleInput},
                                          {"layers.*.mlp", ParallelStyle::PrepareModuleInput},
                                          {"layers.*.sa_norm", ParallelStyle::SequenceParallel},
                                          {"layers.*.mlp_norm", ParallelStyle::SequenceParallel}};
  for (auto& entry : layer_projections()) plan.push_back(std::move(entry));
  return plan;
}

std::vector<ft::ModuleParallelism> inference_plan() {
  std::vector<ft::ModuleParallelism> plan{{"tok_embeddings", ParallelStyle::Rowwise},
                                          {"output", ParallelStyle::Colwise}};
  for (auto& entry : layer_projections()) plan.push_back(std::move(entry));
  return plan;
}

// Attention as in the Megatron plan; a dense MLP split as there, a mixture of experts with its
// router whole and every expert's (and the shared expert's) hidden features split. A model need
// not have both kinds of layer.
std::vector<ft::ModuleParallelism> expert_layer_projections() {
  std::vector<ft::ModuleParallelism> plan{{"layers.*.attn.q_proj", ParallelStyle::Colwise},
                                          {"layers.*.attn.k_proj", ParallelStyle::Colwise},
                                          {"layers.*.attn.v_proj", ParallelStyle::Colwise},
                                          {"layers.*.attn.output_proj", ParallelStyle::Rowwise},
                                          {"layers.*.mlp.w1", ParallelStyle::Colwise, true},
                                          {"layers.*.mlp.w2", ParallelStyle::Rowwise, true},
                                          {"layers.*.mlp.w3", ParallelStyle::Colwise, true},
                                          {"layers.*.mlp.router.gate", ParallelStyle::NoParallel, true},
                                          {"layers.*.mlp.experts", ParallelStyle::ExpertTensorParallel, true},
                                          {"layers.*.mlp.shared_expert.w1", ParallelStyle::Colwise, true},
                                          {"layers.*.mlp.shared_expert.w2", ParallelStyle::Rowwise, true},
                                          {"layers.*.mlp.shared_expert.w3", ParallelStyle::Colwise, true}};
  return plan;
}

std::vector<ft::ModuleParallelism> expert_training_plan() {
  std::vector<ft::ModuleParallelism> plan{{"norm", ParallelStyle::SequenceParallel},
                                          {"output", ParallelStyle::Colwise},
                                          {"layers.*.attn", ParallelStyle::PrepareModuleInput},
                                          {"layers.*.mlp", ParallelStyle::PrepareModuleInput},
                                          {"layers.*.sa_norm", ParallelStyle::SequenceParallel},
                                          {"layers.*.mlp_norm", ParallelStyle::SequenceParallel}};
  for (auto& entry : expert_layer_projections()) plan.push_back(std::move(entry));
  return plan;
}

std::vector<ft::ModuleParallelism> expert_inference_plan() {
  std::vector<ft::ModuleParallelism> plan{{"output", ParallelStyle::Colwise}};
  for (auto& entry : expert_layer_projections()) plan.push_back(std::move(entry));
  return plan;
}

ft::Schema plan_schema() {
  ft::Schema schema;
  schema
      .optional("inference", ft::ValueType::Bool, "false",
                "the inference plan: the same splits without the sequence-parallel entries")
      .optional("enable_fp8_training", ft::ValueType::Bool, "false", "only false: float8 training is not supported");
  return schema;
}

}  // namespace

void register_expert_plan(ft::Registry& reg, const std::string& component, const std::string& summary) {
  reg.add<ft::TensorParallelPlan>(
      component, plan_schema(), summary, [](const ft::ConfigNode& cfg, ft::TensorParallelPlan::Args) {
        if (cfg.get<bool>("enable_fp8_training"))
          cfg.fail("enable_fp8_training", "float8 training is not supported by fthost; set it to false");
        return std::make_unique<FixedPlan>(cfg.get<bool>("inference") ? expert_inference_plan()
                                                                      : expert_training_plan());
      });
}

void register_megatron_plan(ft::Registry& reg, const std::string& component, const std::string& summary) {
  ft::Schema schema;
  schema
      .optional("inference", ft::ValueType::Bool, "false",
                "the inference plan: the same splits without the sequence-parallel entries")
      .optional("enable_fp8_training", ft::ValueType::Bool, "false", "only false: float8 training is not supported");
  reg.add<ft::TensorParallelPlan>(
      component, schema, summary, [](const ft::ConfigNode& cfg, ft::TensorParallelPlan::Args) {
        if (cfg.get<bool>("enable_fp8_training"))
          cfg.fail("enable_fp8_training", "float8 training is not supported by fthost; set it to false");
        return std::make_unique<FixedPlan>(cfg.get<bool>("inference") ? inference_plan() : training_plan());
      });
}

}  // namespace ft_models
