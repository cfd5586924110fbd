#include "config_values.h"

#include "python_str.h"

#include <ft/errors.h>
#include <ft/log.h>

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
  if (table.is_table_list(key)) {
    Json list = Json::array();
    for (const auto& item : table.table_list(key)) {
      Json object = Json::object();
      for (const auto& k : item.keys()) object[k] = value_as_json(item, k);
      list.push_back(std::move(object));
    }
    return list;
  }
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

// repr() of a leaf inside a list or dict; str() differs only for strings, which it leaves bare.
std::string python_repr(const ft::ConfigNode& table, const std::string& key);

std::string python_dict_repr(const ft::ConfigNode& table) {
  std::string out = "{";
  for (const auto& key : table.keys()) {
    if (out.size() > 1) out += ", ";
    out += python_string_repr(key) + ": " + python_repr(table, key);
  }
  return out + "}";
}

std::string python_str(const ft::ConfigNode& table, const std::string& key) {
  if (table.is_table(key)) return python_dict_repr(table.table(key));
  if (table.is_table_list(key)) {
    std::vector<std::string> items;
    for (const auto& item : table.table_list(key)) items.push_back(python_dict_repr(item));
    return python_list_repr(items);
  }
  const Json v = value_as_json(table, key);
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_number_integer()) return v.dump();
  if (v.is_number()) return python_float_str(v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::vector<std::string> items;
    for (const auto& item : v) {
      if (item.is_string())
        items.push_back(python_string_repr(item.get<std::string>()));
      else if (item.is_number_integer())
        items.push_back(item.dump());
      else if (item.is_number())
        items.push_back(python_float_str(item.get<double>()));
      else
        items.push_back(item.is_boolean() ? (item.get<bool>() ? "True" : "False") : "None");
    }
    return python_list_repr(items);
  }
  // An array of mixed types, which no config of torchtune's has: named rather than guessed at.
  ft::log::warn("the metric logger leaves out {}: an array of mixed types", table.key_path(key));
  return "None";
}

std::string python_repr(const ft::ConfigNode& table, const std::string& key) {
  if (!table.is_table(key) && !table.is_table_list(key)) {
    const Json v = value_as_json(table, key);
    if (v.is_string()) return python_string_repr(v.get<std::string>());
  }
  return python_str(table, key);
}

void collect_json_leaves(const ft::ConfigNode& table, const std::string& prefix, const std::string& separator,
                         std::vector<std::pair<std::string, std::string>>& out) {
  for (const auto& key : table.keys()) {
    const std::string name = prefix.empty() ? key : prefix + separator + key;
    if (table.is_table(key))
      collect_json_leaves(table.table(key), name, separator, out);
    else
      out.emplace_back(name, value_as_json(table, key).dump(-1, ' ', false, Json::error_handler_t::replace));
  }
}

void collect_python_leaves(const ft::ConfigNode& table, const std::string& prefix,
                           std::vector<std::pair<std::string, std::string>>& out) {
  for (const auto& key : table.keys()) {
    const std::string name = prefix.empty() ? key : prefix + "." + key;
    if (table.is_table(key))
      collect_python_leaves(table.table(key), name, out);
    else
      out.emplace_back(name, python_str(table, key));
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> config_leaves_as_python_str(const ft::ConfigNode& table) {
  std::vector<std::pair<std::string, std::string>> out;
  collect_python_leaves(table, "", out);
  return out;
}

std::vector<std::pair<std::string, std::string>> config_leaves_as_json(const ft::ConfigNode& table,
                                                                       const std::string& separator) {
  std::vector<std::pair<std::string, std::string>> out;
  collect_json_leaves(table, "", separator, out);
  return out;
}

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
