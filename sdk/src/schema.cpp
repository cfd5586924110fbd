#include "ft_host/config_document.h"

#include <ft/errors.h>
#include <ft/schema.h>

namespace ft {

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::Bool: return "bool";
    case ValueType::Int: return "int";
    case ValueType::Float: return "float";
    case ValueType::String: return "string";
    case ValueType::List: return "list";
    case ValueType::Table: return "table";
    case ValueType::Any: return "any";
  }
  return "any";
}

std::string_view path_role_name(PathRole role) {
  switch (role) {
    case PathRole::None: return "none";
    case PathRole::InputFile: return "input_file";
    case PathRole::InputDirectory: return "input_directory";
    case PathRole::InputPath: return "input_path";
    case PathRole::CheckpointFiles: return "checkpoint_files";
    case PathRole::DatasetSource: return "dataset_source";
    case PathRole::OutputDirectory: return "output_directory";
  }
  return "none";
}

Schema& Schema::required(std::string name, ValueType type, std::string help) {
  return add(KeySpec{std::move(name), type, true, "", std::move(help), PathRole::None});
}

Schema& Schema::optional(std::string name, ValueType type, std::string default_toml, std::string help) {
  return add(KeySpec{std::move(name), type, false, std::move(default_toml), std::move(help), PathRole::None});
}

Schema& Schema::path(std::string_view name, PathRole role) {
  for (auto& k : keys_)
    if (k.name == name) {
      k.path_role = role;
      return *this;
    }
  throw Error("schema: path role for key '" + std::string(name) + "', which the schema does not list");
}

Schema& Schema::allow_unknown_keys() {
  allow_unknown_ = true;
  return *this;
}

const KeySpec* Schema::find(std::string_view name) const {
  for (const auto& k : keys_)
    if (k.name == name) return &k;
  return nullptr;
}

Schema& Schema::add(KeySpec spec) {
  if (spec.name.empty() || spec.name == "_component_") throw Error("schema: invalid key name '" + spec.name + "'");
  if (find(spec.name)) throw Error("schema: key '" + spec.name + "' declared twice");
  if (!spec.default_toml.empty()) {
    try {
      detail::parse_value_as_table(spec.default_toml);
    } catch (const std::exception& e) {
      throw Error("schema: key '" + spec.name + "': default `" + spec.default_toml +
                  "` is not a TOML value: " + e.what());
    }
  }
  keys_.push_back(std::move(spec));
  return *this;
}

}  // namespace ft
