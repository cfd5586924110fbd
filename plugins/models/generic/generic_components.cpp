// Plugin ft_models_generic: the model components that belong to no one family.
// - fthost.models.from_hf_config: a Hugging Face model directory needs no hand-written model
//   table: config.json's model_type picks the registered family that reads it, whose own
//   component then builds the model from the same table.
// - fthost.tensor_parallel_plan: a plan written out in the config, module patterns listed under
//   their style.
#include "config_json_reader.h"
#include "megatron_plan.h"

#include <ft/config.h>
#include <ft/model.h>
#include <ft/model_family.h>
#include <ft/plugin.h>
#include <ft/registry.h>

#include <string>
#include <utility>
#include <vector>

namespace {

// Architectures whose config.json names them but which no family here builds: named as such.
std::string unsupported_architecture(const std::string& model_type) {
  if (model_type == "qwen2_vl" || model_type == "gemma3") return "multimodal models are not supported";
  if (model_type == "qwen2_moe" || model_type == "deepseek_v3" || model_type == "deepseek_v2" ||
      model_type == "gpt_oss")
    return "a mixture-of-experts architecture no family here implements";
  return "not a supported architecture";
}

std::string family_component(const ft::ConfigNode& cfg, const ft::Registry& registry) {
  const ft_models::ConfigJsonReader json(cfg, cfg.get<std::string>("path"));
  const std::string model_type = json.string("model_type", "");
  const ft::ModelFamily* family = registry.family_reading(model_type);
  if (!family || family->hf_config_component.empty()) {
    std::string supported;
    for (const ft::ModelFamily* f : registry.families())
      if (!f->hf_config_component.empty())
        for (const auto& type : f->hf_model_types) supported += (supported.empty() ? "" : ", ") + type;
    json.fail("model_type",
              "\"" + model_type + "\": " + unsupported_architecture(model_type) + " (supported: " + supported + ")");
  }
  return family->hf_config_component;
}

const std::vector<std::pair<const char*, ft::ParallelStyle>>& style_keys() {
  static const std::vector<std::pair<const char*, ft::ParallelStyle>> keys{
      {"colwise", ft::ParallelStyle::Colwise},
      {"rowwise", ft::ParallelStyle::Rowwise},
      {"sequence_parallel", ft::ParallelStyle::SequenceParallel},
      {"prepare_module_input", ft::ParallelStyle::PrepareModuleInput},
      {"no_parallel", ft::ParallelStyle::NoParallel},
      {"expert_tensor_parallel", ft::ParallelStyle::ExpertTensorParallel}};
  return keys;
}

void register_components(ft::Registry& reg) {
  ft::Schema s;
  s.required("path", ft::ValueType::String, "a Hugging Face config.json, or the model directory holding it")
      .path("path", ft::PathRole::InputPath);
  reg.add_delegating<ft::Model>("fthost.models.from_hf_config", s,
                                "the architecture a Hugging Face config.json describes, built by the model family "
                                "registered for its model_type",
                                family_component);

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
                                    return std::make_unique<ft_models::FixedPlan>(std::move(plan));
                                  });
}

}  // namespace

FT_PLUGIN("ft_models_generic", "0.1.0", register_components)
