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

Schema& Schema::required(std::string name, ValueType type, std::string help) {
  return add(KeySpec{std::move(name), type, true, "", std::move(help)});
}

Schema& Schema::optional(std::string name, ValueType type, std::string default_toml, std::string help) {
  return add(KeySpec{std::move(name), type, false, std::move(default_toml), std::move(help)});
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
