// torchtune spells some of the recipe's choices as top-level keys where fthost has a component
// table. Each rewrite turns one such spelling into the table fthost instantiates, in the loaded
// document, so the effective config shows what runs. The rewrites are independent of each other.
// A moved key keeps its origin: its problems name the line the user wrote, or the command line.
#pragma once

#include "ft_host/config_document.h"

#include <ft/config.h>

namespace fthost {

// `[parallelism]` from torchtune's top-level FSDP keys when the config has no such table:
// `fthost.parallelism.fsdp` for several ranks (torchtune always shards), `single` for one.
void rewrite_parallelism_keys(ft::detail::ConfigDocument& doc, const ft::ConfigNode& root, int world_size, int rank);

// `[collate]` from `collate_fn = "dotted.name"` (default `torchtune.data.padded_collate_sft`). A packed
// dataset is collated by `torchtune.data.padded_collate_packed` whatever collate_fn says, as torchtune
// does; a `[collate]` table that would mix a pack's documents is an error.
void rewrite_collate_fn(ft::detail::ConfigDocument& doc, const ft::ConfigNode& root);

// Top-level `keep_last_n` from `checkpointer.keep_last_n_checkpoints` (torchtune's single-device
// configs: keep the newest N checkpoints); giving both, or anything but an integer >= 1, is an error.
void rewrite_checkpoint_retention(ft::detail::ConfigDocument& doc, const ft::ConfigNode& root);

// Every rewrite above, for the process's rank and world size.
void rewrite_torchtune_keys(ft::detail::ConfigDocument& doc, const ft::ConfigNode& root);
// For `world_size` ranks; rank 0 logs what it chose, and a rank < 0 (the launcher's check before
// the ranks start) logs nothing, as rank 0 will.
void rewrite_torchtune_keys(ft::detail::ConfigDocument& doc, const ft::ConfigNode& root, int world_size, int rank);

}  // namespace fthost
