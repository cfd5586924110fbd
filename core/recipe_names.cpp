#include "recipe_names.h"

#include <ft/errors.h>

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
  throw ft::Error("run: unknown recipe '" + name + "'; fthost runs one recipe: " + kRecipe +
                  " (torchtune's full finetuning, on one rank or with --nproc_per_node N)");
}

}  // namespace fthost
