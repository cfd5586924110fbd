#include "config/validation_settings.h"

#include <ft/log.h>

#include <string>
#include <vector>

namespace fthost {

namespace {

// Whether every table of `key` (one table or a list) is packed; nullopt for a mix.
std::optional<bool> packed(const ft::ConfigNode& root, const char* key) {
  std::size_t count = 0;
  const std::vector<ft::ConfigNode> tables = root.table_list(key);
  for (const auto& table : tables)
    if (table.get<bool>("packed", false)) ++count;
  if (count != 0 && count != tables.size()) return std::nullopt;
  return count != 0;
}

bool configured(const ft::ConfigNode& root, const char* key) { return root.is_table(key) || root.is_table_list(key); }

}  // namespace

ValidationSettings read_validation_settings(const ft::ConfigNode& root, std::int64_t batch_size) {
  ValidationSettings v;
  v.has_dataset = configured(root, "dataset_val");
  if (root.has("dataset_val") && !v.has_dataset)
    root.fail("dataset_val", "expected a component table with _component_, or a list of them ([[dataset_val]])");
  v.every_n_steps = root.get_optional<std::int64_t>("run_val_every_n_steps");
  if (v.every_n_steps) {
    if (!v.has_dataset)
      root.fail("run_val_every_n_steps",
                "run_val_every_n_steps is set but dataset_val is not configured; add a [dataset_val] table "
                "(the validation set) or remove run_val_every_n_steps");
    if (*v.every_n_steps < 1)
      root.fail("run_val_every_n_steps",
                "expected an integer >= 1 (validate every N optimizer steps), got " + std::to_string(*v.every_n_steps));
  }
  v.batch_size = root.get<std::int64_t>("batch_size_val", batch_size);
  if (v.batch_size < 1) root.fail("batch_size_val", "expected an integer >= 1, got " + std::to_string(v.batch_size));
  if (!v.has_dataset) {
    if (root.has("batch_size_val")) ft::log::warn("batch_size_val has no effect without dataset_val");
    return v;
  }
  const std::optional<bool> val_packed = packed(root, "dataset_val");
  if (!val_packed)
    root.fail("dataset_val",
              "some of the validation datasets set packed = true and some do not: a concatenation "
              "must be all packed or all unpacked");
  if (configured(root, "dataset") && packed(root, "dataset") != val_packed)
    root.fail("dataset_val", std::string("the validation set is ") + (*val_packed ? "packed" : "not packed") +
                                 " but the training set is " + (*val_packed ? "not" : "") +
                                 ": both are collated by the run's one collate function, so set the same packed "
                                 "value in dataset and dataset_val");
  return v;
}

}  // namespace fthost
