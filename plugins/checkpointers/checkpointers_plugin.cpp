// Plugin ft_checkpointers: model weights to and from checkpoint files.
#include "checkpointers_components.h"

#include <ft/plugin.h>

namespace {
void register_components(ft::Registry& reg) { ft_checkpointers::register_hf_checkpointer(reg); }
}  // namespace

FT_PLUGIN("ft_checkpointers", "0.1.0", register_components)
