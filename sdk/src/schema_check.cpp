#include "ft_host/schema_check.h"

#include "ft_host/config_document.h"
#include "ft_host/suggest.h"

namespace ft::detail {

bool value_matches(ValueType type, const toml::node& node) {
  switch (type) {
    case ValueType::Bool: return node.is_boolean();
    case ValueType::Int: return node.is_integer();
    case ValueType::Float: return node.is_number() || (node.is_string() && (*node.value<std::string>() == "inf"));
    case ValueType::String: return node.is_string();
    case ValueType::List: return node.is_array();
    case ValueType::Table: return node.is_table();
    case ValueType::Any: return true;
  }
  return false;
}

static std::string expected_for(ValueType type) {
  switch (type) {
    case ValueType::Bool: return "a boolean";
    case ValueType::Int: return "an integer";
    case ValueType::Float: return "a number";
    case ValueType::String: return "a string";
    case ValueType::List: return "an array";
    case ValueType::Table: return "a table";
    case ValueType::Any: return "a value";
  }
  return "a value";
}

std::vector<std::string> check_and_complete(const ConfigNode& table, const Schema& schema) {
  auto& doc = *table.document();
  auto* node = doc.find(table.path());
  auto* tbl = node ? node->as_table() : nullptr;
  if (!tbl) return {table.origin() + ": " + table.path() + ": expected a table"};

  std::vector<std::string> problems;
  auto problem = [&](const std::string& key, const std::string& msg) {
    problems.push_back(table.origin(key) + ": " + table.key_path(key) + ": " + msg);
  };

  std::vector<std::string> known;
  for (const auto& k : schema.keys()) known.push_back(k.name);

  for (const auto& [k, v] : *tbl) {
    const std::string key(k.str());
    if (key == "_component_") continue;
    const KeySpec* spec = schema.find(key);
    if (!spec) {
      if (schema.allows_unknown_keys()) continue;
      auto near = close_matches(key, known, 1);
      const std::string unknown = table.path().empty()
                                      ? "unknown top-level key (docs/config.md lists the recipe's keys)"
                                      : "unknown key for " + table.component() + " (run `fthost ls -v` for its keys)";
      problem(key, near.empty() ? unknown : "unknown key; did you mean '" + near.front() + "'?");
      continue;
    }
    if (!value_matches(spec->type, v)) problem(key, "expected " + expected_for(spec->type) + ", got " + describe(v));
  }
  for (const auto& spec : schema.keys()) {
    if (tbl->contains(spec.name)) continue;
    if (spec.required) {
      problem(spec.name, "missing required key (" + std::string(value_type_name(spec.type)) + ": " + spec.help + ")");
    } else if (!spec.default_toml.empty() && problems.empty()) {
      auto parsed = parse_value_as_table(spec.default_toml);
      tbl->insert(spec.name, *parsed.get("v"));
    }
  }
  return problems;
}

}  // namespace ft::detail
