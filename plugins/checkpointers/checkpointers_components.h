// Registration hooks of the ft_checkpointers plugin, one per component source file.
#pragma once

#include <ft/registry.h>

namespace ft_checkpointers {
void register_hf_checkpointer(ft::Registry& reg);
}  // namespace ft_checkpointers
