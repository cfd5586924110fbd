// Registration hooks of the ft_data plugin, one per source file.
#pragma once

#include <ft/registry.h>

namespace ft_data {
void register_tokenized_jsonl(ft::Registry& reg);
void register_padded_collate(ft::Registry& reg);
}  // namespace ft_data
