// Plugin ft_datasets: torchtune's text datasets over local files, packing, padded_collate_packed.
#include <ft/plugin.h>

#include "dataset_components.h"

namespace {
void register_components(ft::Registry& reg) {
  ft_ds::register_sft_datasets(reg);
  ft_ds::register_text_completion_dataset(reg);
  ft_ds::register_padded_collate_packed(reg);
}
}  // namespace

FT_PLUGIN("ft_datasets", "0.1.0", register_components)
