// Plugin ft_llama: the Llama 2/3.x, Mistral, Qwen 2/2.5/3, Gemma, Gemma 2 and Phi-3/4 decoders
// and their tensor-parallel plans.
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
