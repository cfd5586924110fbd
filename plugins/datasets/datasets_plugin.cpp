// Plugin ft_datasets: every dataset and collate function. Pre-tokenized JSONL; torchtune's text
// datasets over local files (instruct, Alpaca, chat, text completion), optionally packed; and
// the collates padded_collate_sft and padded_collate_packed.
#include <ft/plugin.h>

#include "dataset_components.h"

namespace {
void register_components(ft::Registry& reg) {
  ft_ds::register_tokenized_jsonl(reg);
  ft_ds::register_sft_dataset_builders(reg);
  ft_ds::register_text_completion_dataset(reg);
  ft_ds::register_padded_collate_sft(reg);
  ft_ds::register_padded_collate_packed(reg);
#if defined(FTHOST_WITH_IMAGES)
  ft_ds::register_multimodal_dataset_builders(reg);
  ft_ds::register_padded_collate_tiled_images(reg);
#endif
}
}  // namespace

FT_PLUGIN("ft_datasets", "0.1.0", register_components)
