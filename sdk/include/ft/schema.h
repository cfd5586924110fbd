// The keys a component accepts: name, type, default and a one-line help.
// The host checks every component table against its schema before the factory runs,
// fills in defaults, and reports unknown keys with a suggestion.
#pragma once

#include <ft/export.h>

#include <string>
#include <string_view>
#include <vector>

namespace ft {

enum class ValueType { Bool, Int, Float, String, List, Table, Any };

FT_API std::string_view value_type_name(ValueType type);

struct KeySpec {
  std::string name;
  ValueType type = ValueType::Any;
  bool required = false;
  std::string default_toml;  // TOML value text ("1e-3", "[0.9, 0.999]", "\"cpu\""); empty: no default
  std::string help;
};

class FT_API Schema {
 public:
  Schema& required(std::string name, ValueType type, std::string help);
  // `default_toml` is a TOML value; pass "" for an optional key without a default.
  Schema& optional(std::string name, ValueType type, std::string default_toml, std::string help);
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
