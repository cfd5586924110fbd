#include "megatron_plan.h"

#include <ft/config.h>

#include <utility>

namespace ft_models {

namespace {

using ft::ParallelStyle;

// Attention's and a dense MLP's projections in the Megatron layout.
std::vector<ft::ModuleParallelism> layer_projections() {
  return {{"layers.*.attn.q_proj", ParallelStyle::Colwise}, {"layers.*.attn.k_proj", ParallelStyle::Colwise},
          {"layers.*.attn.v_proj", ParallelStyle::Colwise}, {"layers.*.attn.output_proj", ParallelStyle::Rowwise},
          {"layers.*.mlp.w1", ParallelStyle::Colwise},      {"layers.*.mlp.w2", ParallelStyle::Rowwise},
          {"layers.*.mlp.w3", ParallelStyle::Colwise}};
}

// The same with a mixture of experts' router whole and every expert's (and the shared expert's)
// hidden features split. A model need not have both kinds of layer: the MLP entries may match
// no module.
std::vector<ft::ModuleParallelism> expert_layer_projections() {
  std::vector<ft::ModuleParallelism> plan = layer_projections();
  for (auto& entry : plan)
    if (entry.pattern.rfind("layers.*.mlp.", 0) == 0) entry.optional = true;
  for (ft::ModuleParallelism entry :
       {ft::ModuleParallelism{"layers.*.mlp.router.gate", ParallelStyle::NoParallel},
        ft::ModuleParallelism{"layers.*.mlp.experts", ParallelStyle::ExpertTensorParallel},
        ft::ModuleParallelism{"layers.*.mlp.shared_expert.w1", ParallelStyle::Colwise},
        ft::ModuleParallelism{"layers.*.mlp.shared_expert.w2", ParallelStyle::Rowwise},
        ft::ModuleParallelism{"layers.*.mlp.shared_expert.w3", ParallelStyle::Colwise}}) {
    entry.optional = true;
    plan.push_back(std::move(entry));
  }
  return plan;
}

// torchtune's training plan (norms and block inputs sequence-parallel) or its inference plan (the
// same splits without those entries): the output colwise, the embedding rowwise where
// `split_embedding`, then the layers' projections.
std::vector<ft::ModuleParallelism> plan_of(bool training, bool split_embedding,
                                           std::vector<ft::ModuleParallelism> projections) {
  std::vector<ft::ModuleParallelism> plan;
  if (split_embedding) plan.push_back({"tok_embeddings", ParallelStyle::Rowwise});
  if (training) plan.push_back({"norm", ParallelStyle::SequenceParallel});
  plan.push_back({"output", ParallelStyle::Colwise});
  if (training)
    plan.insert(plan.end(), {{"layers.*.attn", ParallelStyle::PrepareModuleInput},
                             {"layers.*.mlp", ParallelStyle::PrepareModuleInput},
                             {"layers.*.sa_norm", ParallelStyle::SequenceParallel},
                             {"layers.*.mlp_norm", ParallelStyle::SequenceParallel}});
  for (auto& entry : projections) plan.push_back(std::move(entry));
  return plan;
}

void register_plan(ft::Registry& reg, const std::string& component, const std::string& summary, bool split_embedding,
                   std::vector<ft::ModuleParallelism> (*projections)()) {
  ft::Schema schema;
  schema
      .optional("inference", ft::ValueType::Bool, "false",
                "the inference plan: the same splits without the sequence-parallel entries")
      .optional("enable_fp8_training", ft::ValueType::Bool, "false", "only false: float8 training is not supported");
  reg.add<ft::TensorParallelPlan>(
      component, schema, summary,
      [split_embedding, projections](const ft::ConfigNode& cfg, ft::TensorParallelPlan::Args) {
        if (cfg.get<bool>("enable_fp8_training"))
          cfg.fail("enable_fp8_training", "float8 training is not supported by fthost; set it to false");
        return std::make_unique<FixedPlan>(plan_of(!cfg.get<bool>("inference"), split_embedding, projections()));
      });
}

}  // namespace

void register_megatron_plan(ft::Registry& reg, const std::string& component, const std::string& summary) {
  register_plan(reg, component, summary, /*split_embedding=*/true, layer_projections);
}

void register_expert_plan(ft::Registry& reg, const std::string& component, const std::string& summary) {
  register_plan(reg, component, summary, /*split_embedding=*/false, expert_layer_projections);
}

}  // namespace ft_models
