// Registration hooks of the ft_llama plugin, one per source file.
#pragma once

#include <ft/registry.h>

namespace ft_llama {
void register_model_builders(ft::Registry& reg);
void register_hf_config_builder(ft::Registry& reg);
void register_tensor_parallel_plans(ft::Registry& reg);
}  // namespace ft_llama
