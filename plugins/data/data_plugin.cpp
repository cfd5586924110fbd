// Plugin ft_data: datasets and collate functions.
#include "data_components.h"

#include <ft/plugin.h>

namespace {
void register_components(ft::Registry& reg) {
  ft_data::register_tokenized_jsonl(reg);
  ft_data::register_padded_collate(reg);
}
}  // namespace

FT_PLUGIN("ft_data", "0.1.0", register_components)
