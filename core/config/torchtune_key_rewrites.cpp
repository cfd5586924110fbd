#include "config/torchtune_key_rewrites.h"

#include "config/distributed_environment.h"

#include <ft/log.h>

#include <string>
#include <utility>
#include <vector>

namespace fthost {

namespace {

constexpr const char* kSftCollate = "torchtune.data.padded_collate_sft";
constexpr const char* kPackedCollate = "torchtune.data.padded_collate_packed";

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

// The top-level table a rewrite fills in, made when the config has none.
toml::table& component_table(ft::detail::ConfigDocument& doc, const ft::ConfigNode& root, const std::string& key) {
  toml::node* node = doc.root().get(key);
  if (!node) node = &doc.root().insert(key, toml::table{}).first->second;
  if (!node->is_table()) root.fail(key, "expected a table with _component_, got " + ft::detail::describe(*node));
  return *node->as_table();
}

// A moved key's problems are reported where the user wrote it: the line of the key it was moved
// from, or the command line. A document shows its lines only in its origin text, `file:LINE`.
void carry_origin(ft::detail::ConfigDocument& doc, const std::string& from, const std::string& to) {
  const std::string origin = doc.origin_of(from);
  if (origin == "command line") {
    doc.mark_overridden(to);
    return;
  }
  const std::string file_prefix = doc.source() + ":";
  const std::string line = origin.rfind(file_prefix, 0) == 0 ? origin.substr(file_prefix.size()) : "";
  if (!line.empty() && line.find_first_not_of("0123456789") == std::string::npos) doc.set_line(to, std::stoul(line));
  // Otherwise the file alone (TOML), which `to` names as well.
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
    toml::table& parallelism = component_table(doc, root, "parallelism");
    parallelism.insert_or_assign("_component_", "fthost.parallelism.single");
    for (const auto& key : torchtune_parallelism_keys()) doc.root().erase(key.first);
    return;
  }
  toml::table& parallelism = component_table(doc, root, "parallelism");
  parallelism.insert_or_assign("_component_", "fthost.parallelism.fsdp");
  for (const auto& [from, to] : torchtune_parallelism_keys()) {
    // Moved, not copied: the effective config must load again with its [parallelism] table.
    if (const toml::node* value = doc.root().get(from)) {
      parallelism.insert_or_assign(to, *value);
      carry_origin(doc, from, "parallelism." + to);
      doc.root().erase(from);
    }
  }
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
  component_table(doc, root, "collate").insert_or_assign("_component_", name);
  if (root.has("collate_fn")) {
    carry_origin(doc, "collate_fn", "collate._component_");
    doc.root().erase("collate_fn");
  }
}

void rewrite_checkpoint_retention(ft::detail::ConfigDocument& doc, const ft::ConfigNode& root) {
  const std::string from = "checkpointer.keep_last_n_checkpoints";
  if (!root.is_table("checkpointer") || !root.table("checkpointer").has("keep_last_n_checkpoints")) return;
  const ft::ConfigNode checkpointer = root.table("checkpointer");
  if (root.has("keep_last_n"))
    root.fail("keep_last_n", "give the number of checkpoints to keep once: keep_last_n or " + from);
  toml::table* table = doc.root().get("checkpointer")->as_table();
  const toml::node* value = table->get("keep_last_n_checkpoints");
  if (!value->is_integer() || value->as_integer()->get() < 1)
    checkpointer.fail(
        "keep_last_n_checkpoints",
        "expected an integer >= 1 (how many of the newest checkpoints to keep), got " + ft::detail::describe(*value));
  // Moved, not copied: the effective config must load again, and the checkpointer's schema does
  // not take the key.
  doc.root().insert_or_assign("keep_last_n", *value);
  carry_origin(doc, from, "keep_last_n");
  table->erase("keep_last_n_checkpoints");
}

void rewrite_torchtune_keys(ft::detail::ConfigDocument& doc, const ft::ConfigNode& root, int world_size, int rank) {
  rewrite_parallelism_keys(doc, root, world_size, rank);
  rewrite_collate_fn(doc, root);
  rewrite_checkpoint_retention(doc, root);
}

void rewrite_torchtune_keys(ft::detail::ConfigDocument& doc, const ft::ConfigNode& root) {
  const DistributedEnvironment env = read_distributed_environment();
  rewrite_torchtune_keys(doc, root, env.world_size, env.rank);
}

}  // namespace fthost
