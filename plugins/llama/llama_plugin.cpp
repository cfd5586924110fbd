// Plugin ft_llama: Llama 2/3/3.1/3.2 and Qwen 2/2.5 decoders and their tensor-parallel plans.
#include "llama_components.h"

#include <ft/plugin.h>

namespace {
void register_components(ft::Registry& reg) {
  ft_llama::register_model_builders(reg);
  ft_llama::register_hf_config_builder(reg);
  ft_llama::register_tensor_parallel_plans(reg);
}
}  // namespace

FT_PLUGIN("ft_llama", "0.1.0", register_components)
