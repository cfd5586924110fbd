// The recipe names `fthost run` accepts in torchtune's spelling, `fthost run full_finetune_distributed
// --config X`: fthost is one recipe, so the name only confirms which.
#pragma once

#include <string>

namespace fthost {

// Whether an argument is a name (a recipe after `run`, a config after `validate`), not an override
// (`key=value`, `~key`).
bool is_recipe_argument(const std::string& arg);

// Throws ft::Error naming the known recipe unless `name` is it.
void check_recipe_name(const std::string& name);

}  // namespace fthost
