// The keys a component accepts: name, type, default and a one-line help, and for a key that
// names something on disk, what (its PathRole).
// The host checks every component table against its schema before the factory runs,
// fills in defaults, and reports unknown keys with a suggestion. Before it builds anything it
// also checks every path a key with a PathRole names (the pre-flight, docs/preflight.md), from
// the schema alone, without loading the plugin.
#pragma once

#include <ft/export.h>

#include <string>
#include <string_view>
#include <vector>

namespace ft {

enum class ValueType { Bool, Int, Float, String, List, Table, Any };

FT_API std::string_view value_type_name(ValueType type);

// What a string key names on disk. An empty string (or an absent key) names nothing.
enum class PathRole {
  None,
  InputFile,       // a file the component reads
  InputDirectory,  // a directory the component reads
  InputPath,       // a file or a directory the component reads
  // safetensors files in the directory of the same table's `checkpoint_dir`: a list of names,
  // a {filename_format, max_filename} table, or empty (the directory's
  // model.safetensors.index.json, else model.safetensors)
  CheckpointFiles,
  // datasets.load_dataset's path: a local file or directory, a format name ("json", "parquet",
  // ...) with the same table's `data_files`, or a Hub dataset in the local cache at the table's
  // `revision` and `split`
  DatasetSource,
  // a directory checkpoints are written to: created when missing, so it (or its nearest existing
  // parent) must be writable, with room for one checkpoint
  OutputDirectory,
};

FT_API std::string_view path_role_name(PathRole role);

struct KeySpec {
  std::string name;
  ValueType type = ValueType::Any;
  bool required = false;
  std::string default_toml;  // TOML value text ("1e-3", "[0.9, 0.999]", "\"cpu\""); empty: no default
  std::string help;
  PathRole path_role = PathRole::None;
};

class FT_API Schema {
 public:
  Schema& required(std::string name, ValueType type, std::string help);
  // `default_toml` is a TOML value; pass "" for an optional key without a default.
  Schema& optional(std::string name, ValueType type, std::string default_toml, std::string help);
  // Declares what the listed key `name` names on disk, for the pre-flight check.
  Schema& path(std::string_view name, PathRole role);
  // Accept keys the schema does not list (for tables passed through to another component).
  Schema& allow_unknown_keys();

  const std::vector<KeySpec>& keys() const { return keys_; }
  const KeySpec* find(std::string_view name) const;
  bool allows_unknown_keys() const { return allow_unknown_; }

 private:
  Schema& add(KeySpec spec);
  std::vector<KeySpec> keys_;
  bool allow_unknown_ = false;
};

}  // namespace ft
