// Registration hooks of the ft_datasets plugin, one per source file.
#pragma once

#include <ft/registry.h>

namespace ft_ds {
void register_tokenized_jsonl(ft::Registry& reg);
void register_sft_dataset_builders(ft::Registry& reg);
void register_text_completion_dataset(ft::Registry& reg);
// Built with the image library only (FTHOST_WITH_IMAGES).
void register_multimodal_dataset_builders(ft::Registry& reg);
void register_padded_collate_tiled_images(ft::Registry& reg);
void register_padded_collate_sft(ft::Registry& reg);
void register_padded_collate_packed(ft::Registry& reg);
}  // namespace ft_ds
