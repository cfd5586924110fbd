// Top-level keys of a run configuration and the component tables the recipe instantiates.
#pragma once

#include <ft/kind.h>
#include <ft/schema.h>

#include <optional>
#include <string>

namespace fthost {

const ft::Schema& recipe_schema();
// The kind a top-level component table holds (`optimizer` -> Optimizer), if it is one.
std::optional<ft::Kind> kind_of_table(const std::string& key);

}  // namespace fthost
