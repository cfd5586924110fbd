// Tensor-parallel plans. torchtune.models.llama3.base_llama_tp_plan: the plan torchtune's Llama 3 /
// 3.1 / 3.3 configs name. fthost.tensor_parallel_plan: a plan written out in the config, module
// patterns listed under their style.
//
// base_llama_tp_plan: every fthost decoder has the same modules (Qwen 2's q/k/v biases are split
// with the weights; Qwen 3's per-head q/k norms and Gemma 2's extra norms stay whole), so the plan
// applies to every family; torchtune has a separate one only for Qwen 3, with the same splits.
//
// The training plan lists the sequence-parallel entries of torchtune's (norms, the attention and
// MLP inputs): fthost keeps those activations whole on every rank, so the layers communicate by
// one all-reduce each way instead of a reduce-scatter and an all-gather, with the same values.
#include "llama_components.h"

#include <ft/config.h>
#include <ft/tensor_parallel.h>

#include <utility>

namespace ft_llama {

namespace {

using ft::ParallelStyle;

class FixedPlan final : public ft::TensorParallelPlan {
 public:
  explicit FixedPlan(std::vector<ft::ModuleParallelism> modules) : modules_(std::move(modules)) {}
  std::vector<ft::ModuleParallelism> modules() const override { return modules_; }

 private:
  std::vector<ft::ModuleParallelism> modules_;
};

// The Megatron split of every layer, shared by both plans.
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

const std::vector<std::pair<const char*, ParallelStyle>>& style_keys() {
  static const std::vector<std::pair<const char*, ParallelStyle>> keys{
      {"colwise", ParallelStyle::Colwise},
      {"rowwise", ParallelStyle::Rowwise},
      {"sequence_parallel", ParallelStyle::SequenceParallel},
      {"prepare_module_input", ParallelStyle::PrepareModuleInput}};
  return keys;
}

}  // namespace

void register_tensor_parallel_plans(ft::Registry& reg) {
  ft::Schema listed;
  for (const auto& [key, style] : style_keys())
    listed.optional(key, ft::ValueType::List, "[]",
                    "module patterns split " + std::string(ft::parallel_style_name(style)) +
                        " (torchtune module names; * matches one path component)");
  reg.add<ft::TensorParallelPlan>("fthost.tensor_parallel_plan", listed,
                                  "a plan listed in the config: module patterns under their styles",
                                  [](const ft::ConfigNode& cfg, ft::TensorParallelPlan::Args) {
                                    std::vector<ft::ModuleParallelism> plan;
                                    for (const auto& [key, style] : style_keys())
                                      for (auto& pattern : cfg.get<std::vector<std::string>>(key))
                                        plan.push_back({std::move(pattern), style});
                                    if (plan.empty()) cfg.fail("colwise", "the plan lists no module");
                                    return std::make_unique<FixedPlan>(std::move(plan));
                                  });

  ft::Schema schema;
  schema
      .optional("inference", ft::ValueType::Bool, "false",
                "the inference plan: the same splits without the sequence-parallel entries")
      .optional("enable_fp8_training", ft::ValueType::Bool, "false", "only false: float8 training is not supported");
  auto plan = [](const ft::ConfigNode& cfg, ft::TensorParallelPlan::Args) {
    if (cfg.get<bool>("enable_fp8_training"))
      cfg.fail("enable_fp8_training", "float8 training is not supported by fthost; set it to false");
    return std::make_unique<FixedPlan>(cfg.get<bool>("inference") ? inference_plan() : training_plan());
  };
  reg.add<ft::TensorParallelPlan>(
      "torchtune.models.llama3.base_llama_tp_plan", schema,
      "Megatron plan of every fthost decoder: q/k/v, w1/w3, output colwise; output_proj, w2, tok_embeddings rowwise",
      plan);
  // torchtune's Qwen 3 plan splits the same modules (its q/k norms stay whole, as here).
  reg.add<ft::TensorParallelPlan>("torchtune.models.qwen3.tp_plan", schema,
                                  "Qwen 3's plan: the same Megatron split as base_llama_tp_plan", plan);
}

}  // namespace ft_llama
