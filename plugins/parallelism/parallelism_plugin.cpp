// Plugin ft_parallelism: how ranks share a model — single, ddp, fsdp, hsdp.
#include "parallelism_components.h"

#include <ft/plugin.h>

namespace {
void register_components(ft::Registry& reg) {
  ft_parallelism::register_single_device(reg);
  ft_parallelism::register_data_parallel(reg);
  ft_parallelism::register_fully_sharded(reg);
}
}  // namespace

FT_PLUGIN("ft_parallelism", "0.1.0", register_components)
