// The tiny-model demo recipe: trains a small bundled MLP on seeded synthetic regression data
// through the optimizer, lr_scheduler and metric_logger plugins. It proves the plugin path end
// to end until the full-finetune recipe (model, loss, data, checkpointer plugins) lands.
#pragma once

#include <ft/config.h>
#include <ft/registry.h>

namespace fthost {

int run_demo_recipe(const ft::Registry& registry, const ft::ConfigNode& root);

}  // namespace fthost
