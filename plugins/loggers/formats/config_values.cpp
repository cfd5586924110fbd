#include "config_values.h"

#include <ft/errors.h>

#include <nlohmann/json.hpp>

#include <cstdint>

namespace ft_loggers {

namespace {

using Json = nlohmann::ordered_json;

template <class T>
bool read_as(const ft::ConfigNode& table, const std::string& key, Json& out) {
  try {
    out = table.get<T>(key);
    return true;
  } catch (const ft::ConfigError&) {
    return false;
  }
}

Json value_as_json(const ft::ConfigNode& table, const std::string& key) {
  if (table.is_table(key)) {
    const ft::ConfigNode sub = table.table(key);
    Json object = Json::object();
    for (const auto& k : sub.keys()) object[k] = value_as_json(sub, k);
    return object;
  }
  Json v;
  // Strings before numbers: a double also accepts the string "inf".
  if (read_as<bool>(table, key, v) || read_as<std::int64_t>(table, key, v) || read_as<std::string>(table, key, v) ||
      read_as<double>(table, key, v) || read_as<std::vector<std::int64_t>>(table, key, v) ||
      read_as<std::vector<double>>(table, key, v) || read_as<std::vector<std::string>>(table, key, v))
    return v;
  return nullptr;  // arrays of tables or of mixed types: nothing the loggers can show
}

void collect_leaves(const ft::ConfigNode& table, const std::string& prefix, std::vector<HParam>& out) {
  for (const auto& key : table.keys()) {
    const std::string name = prefix.empty() ? key : prefix + "." + key;
    if (table.is_table(key)) {
      collect_leaves(table.table(key), name, out);
      continue;
    }
    const Json v = value_as_json(table, key);
    if (v.is_boolean())
      out.push_back({name, v.get<bool>()});
    else if (v.is_number())
      out.push_back({name, v.get<double>()});
    else if (v.is_string())
      out.push_back({name, v.get<std::string>()});
    else if (!v.is_null())
      out.push_back({name, v.dump(-1, ' ', false, Json::error_handler_t::replace)});
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> config_items_as_json(const ft::ConfigNode& table) {
  std::vector<std::pair<std::string, std::string>> items;
  for (const auto& key : table.keys())
    items.emplace_back(key, value_as_json(table, key).dump(-1, ' ', false, Json::error_handler_t::replace));
  return items;
}

std::vector<HParam> config_leaves_as_hparams(const ft::ConfigNode& table) {
  std::vector<HParam> out;
  collect_leaves(table, "", out);
  return out;
}

}  // namespace ft_loggers
