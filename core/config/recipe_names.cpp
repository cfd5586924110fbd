#include "config/recipe_names.h"

#include <ft/errors.h>
#include <ft/text.h>

namespace fthost {

namespace {

// torchtune's name for the recipe fthost implements, on one rank or many.
constexpr const char* kRecipe = "full_finetune_distributed";

}  // namespace

bool is_recipe_argument(const std::string& arg) {
  return !arg.empty() && arg[0] != '~' && arg.find('=') == std::string::npos;
}

void check_recipe_name(const std::string& name) {
  if (name == kRecipe) return;
  std::string hint;
  for (const char* ext : {".yaml", ".yml", ".toml"})
    if (ft::ends_with(name, ext)) hint = "; a config is given with --config " + name;
  throw ft::Error("run: unknown recipe '" + name + "'; fthost runs one recipe: " + kRecipe +
                  " (torchtune's full finetuning, on one rank or with --nproc_per_node N)" + hint);
}

}  // namespace fthost
