#include "config/torchtune_key_rewrites.h"

#include "config/config_loader.h"
#include "config/distributed_environment.h"

#include <ft/log.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace fthost {

namespace {

constexpr const char* kSftCollate = "torchtune.data.padded_collate_sft";
constexpr const char* kPackedCollate = "torchtune.data.padded_collate_packed";

std::string toml_text(const toml::node& value) {
  std::ostringstream text;
  value.visit([&](const auto& v) { text << v; });
  return text.str();
}

// Whether the run's samples are packs: every `[dataset]` (or every `[[dataset]]` item) sets
// packed = true. A mix is refused, as torchtune's ConcatDataset refuses it.
bool datasets_are_packed(const ft::ConfigNode& root) {
  if (!root.is_table("dataset") && !root.is_table_list("dataset")) return false;
  const std::vector<ft::ConfigNode> tables = root.table_list("dataset");
  std::size_t packed = 0;
  for (const auto& table : tables)
    if (table.get<bool>("packed", false)) ++packed;
  if (packed != 0 && packed != tables.size())
    root.fail("dataset", std::to_string(packed) + " of the " + std::to_string(tables.size()) +
                             " datasets set packed = true: a concatenation must be all packed or all unpacked");
  return packed != 0;
}

// torchtune's top-level keys of the sharding strategy and their names in [parallelism].
const std::vector<std::pair<std::string, std::string>>& torchtune_parallelism_keys() {
  static const std::vector<std::pair<std::string, std::string>> keys = {
      {"data_parallel_shard_dim", "data_parallel_shard_dim"},
      {"data_parallel_replicate_dim", "data_parallel_replicate_dim"},
      {"fsdp_reshard_after_forward", "reshard_after_forward"},
      {"fsdp_cpu_offload", "cpu_offload"},
      {"custom_sharded_layers", "custom_sharded_layers"},
  };
  return keys;
}

}  // namespace

void rewrite_parallelism_keys(ft::detail::ConfigDocument& doc, const ft::ConfigNode& root, int world_size, int rank) {
  if (root.is_table("parallelism")) {
    // The table configures the strategy; torchtune's top-level spelling beside it would be
    // silently unused.
    for (const auto& [from, to] : torchtune_parallelism_keys())
      if (root.has(from))
        root.fail(from,
                  "a [parallelism] table is given, which this key does not reach: set parallelism." + to + " instead");
    return;
  }
  if (world_size == 1) {
    if (rank == 0 && (root.get<bool>("fsdp_cpu_offload", false) || root.has("custom_sharded_layers")))
      ft::log::warn(
          "fsdp_cpu_offload / custom_sharded_layers have no effect: a one-rank run trains unsharded with "
          "fthost.parallelism.single (a [parallelism] table with _component_ = \"fthost.parallelism.fsdp\" shards "
          "on one rank too and applies them)");
    std::vector<std::string> overrides{"parallelism._component_=\"fthost.parallelism.single\""};
    for (const auto& key : torchtune_parallelism_keys())
      if (root.has(key.first)) overrides.push_back("~" + key.first);
    apply_overrides(doc, overrides);
    return;
  }
  std::vector<std::string> overrides{"parallelism._component_=\"fthost.parallelism.fsdp\""};
  for (const auto& [from, to] : torchtune_parallelism_keys()) {
    if (!root.has(from)) continue;
    if (const toml::node* value = doc.root().get(from))
      overrides.push_back("parallelism." + to + "=" + toml_text(*value));
    // Moved, not copied: the effective config must load again with its [parallelism] table.
    overrides.push_back("~" + from);
  }
  apply_overrides(doc, overrides);
  if (rank == 0)
    ft::log::info(
        "parallelism: {} ranks and no [parallelism] table: sharding with fthost.parallelism.fsdp, as torchtune does",
        world_size);
}

void rewrite_collate_fn(ft::detail::ConfigDocument& doc, const ft::ConfigNode& root) {
  const bool packed = datasets_are_packed(root);
  if (root.is_table("collate")) {
    if (root.has("collate_fn"))
      root.fail("collate_fn", "give the collate function once: either collate_fn or a [collate] table");
    if (packed && root.table("collate").component() == kSftCollate)
      root.fail("collate", std::string(kSftCollate) + " would let the documents of a pack attend to each other; " +
                               "packed datasets need " + kPackedCollate +
                               " (or leave [collate] out: it is chosen for you)");
    return;
  }
  const std::string named = root.get<std::string>("collate_fn", kSftCollate);
  if (named.find("left_pad_sequence") != std::string::npos)
    root.fail("collate_fn", "left_pad_sequence collator is only for inference.");
  std::string name = named;
  if (packed && named != kPackedCollate) {
    if (root.has("collate_fn"))
      ft::log::warn("collate_fn = \"{}\" is not used: the dataset is packed, so {} collates it, as torchtune does",
                    named, kPackedCollate);
    name = kPackedCollate;
  }
  std::vector<std::string> overrides{"collate._component_=\"" + name + "\""};
  if (root.has("collate_fn")) overrides.push_back("~collate_fn");
  apply_overrides(doc, overrides);
}

void rewrite_torchtune_keys(ft::detail::ConfigDocument& doc, const ft::ConfigNode& root) {
  const DistributedEnvironment env = read_distributed_environment();
  rewrite_parallelism_keys(doc, root, env.world_size, env.rank);
  rewrite_collate_fn(doc, root);
}

}  // namespace fthost
