// The full-finetune recipe: torchtune's full_finetune_distributed training loop on one rank,
// every component instantiated from plugins. See docs/parity.md for where it deliberately
// differs from the seed.
#pragma once

#include <ft/config.h>
#include <ft/registry.h>

namespace fthost {

int run_full_finetune(const ft::Registry& registry, const ft::ConfigNode& root);

}  // namespace fthost
