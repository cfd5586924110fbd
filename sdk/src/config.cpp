#include "ft_host/config_document.h"

#include <ft/errors.h>

#include <climits>
#include <cmath>
#include <sstream>

namespace ft {
namespace detail {

std::string ConfigDocument::origin_of(const std::string& path) const {
  // A key inherits the origin of the closest overridden table above it.
  std::string p = path;
  while (true) {
    if (overridden_.count(p)) return "command line";
    auto dot = p.rfind('.');
    if (dot == std::string::npos) break;
    p.resize(dot);
  }
  // A key without a recorded line (one the schema requires but the file lacks) names its table's.
  for (p = path; !lines_.empty();) {
    if (auto it = lines_.find(p); it != lines_.end()) return source_ + ":" + std::to_string(it->second);
    auto dot = p.rfind('.');
    if (dot == std::string::npos) break;
    p.resize(dot);
  }
  return source_;
}

template <class Node, class Table>
static Node* find_in(Table& root, std::string_view dotted) {
  if (dotted.empty()) return &root;
  Node* node = &root;
  std::size_t start = 0;
  while (start <= dotted.size()) {
    auto end = dotted.find('.', start);
    if (end == std::string_view::npos) end = dotted.size();
    const std::string_view segment = dotted.substr(start, end - start);
    if (auto* table = node->as_table()) {
      node = table->get(segment);
    } else if (auto* array = node->as_array()) {
      // An array of tables ([[dataset]]) is addressed by index: "dataset.1._component_".
      std::size_t index = 0;
      for (char c : segment) {
        if (c < '0' || c > '9') return nullptr;
        index = index * 10 + static_cast<std::size_t>(c - '0');
      }
      if (segment.empty()) return nullptr;
      node = array->get(index);
    } else {
      return nullptr;
    }
    if (!node) return nullptr;
    start = end + 1;
  }
  return node;
}

toml::node* ConfigDocument::find(std::string_view p) { return find_in<toml::node>(root_, p); }
const toml::node* ConfigDocument::find(std::string_view p) const { return find_in<const toml::node>(root_, p); }

std::string describe(const toml::node& node) {
  std::ostringstream out;
  switch (node.type()) {
    case toml::node_type::string: out << "string \"" << *node.value<std::string>() << "\""; break;
    case toml::node_type::integer: out << "integer " << *node.value<int64_t>(); break;
    case toml::node_type::floating_point: out << "number " << *node.value<double>(); break;
    case toml::node_type::boolean: out << "boolean " << (*node.value<bool>() ? "true" : "false"); break;
    case toml::node_type::array: out << "array " << *node.as_array(); break;
    case toml::node_type::table: out << "a table"; break;
    default: out << "a date/time value"; break;
  }
  return out.str();
}

toml::table parse_value_as_table(std::string_view value_text, const char* key) {
  std::string doc = std::string(key) + " = " + std::string(value_text);
  try {
    return toml::parse(doc);
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(std::string(e.description()));
  }
}

}  // namespace detail

namespace {

std::string join_path(const std::string& base, std::string_view key) {
  if (base.empty()) return std::string(key);
  if (key.empty()) return base;
  return base + "." + std::string(key);
}

const toml::table& table_of(const detail::ConfigDocument& doc, const std::string& path) {
  const toml::node* node = doc.find(path);
  if (!node || !node->is_table()) throw ConfigError(doc.source() + ": " + path + ": expected a table");
  return *node->as_table();
}

template <class T>
struct Convert;

template <>
struct Convert<bool> {
  static constexpr const char* expected = "a boolean";
  static std::optional<bool> from(const toml::node& n) { return n.value_exact<bool>(); }
};
template <>
struct Convert<int64_t> {
  static constexpr const char* expected = "an integer";
  static std::optional<int64_t> from(const toml::node& n) { return n.value_exact<int64_t>(); }
};
template <>
struct Convert<int> {
  static constexpr const char* expected = "an integer";
  static std::optional<int> from(const toml::node& n) {
    auto v = n.value_exact<int64_t>();
    if (!v || *v < INT32_MIN || *v > INT32_MAX) return std::nullopt;
    return static_cast<int>(*v);
  }
};
template <>
struct Convert<double> {
  static constexpr const char* expected = "a number";
  static std::optional<double> from(const toml::node& n) {
    if (n.is_floating_point()) return n.value_exact<double>();
    if (n.is_integer()) return static_cast<double>(*n.value_exact<int64_t>());
    // TOML writes infinity as `inf`; torchtune's clip_grad_norm='inf' is a string.
    if (auto s = n.value_exact<std::string>(); s && (*s == "inf" || *s == "-inf"))
      return *s == "inf" ? HUGE_VAL : -HUGE_VAL;
    return std::nullopt;
  }
};
template <>
struct Convert<std::string> {
  static constexpr const char* expected = "a string";
  static std::optional<std::string> from(const toml::node& n) { return n.value_exact<std::string>(); }
};
template <class E>
struct Convert<std::vector<E>> {
  static constexpr const char* expected = "an array";
  static std::optional<std::vector<E>> from(const toml::node& n) {
    const auto* arr = n.as_array();
    if (!arr) return std::nullopt;
    std::vector<E> out;
    for (const auto& item : *arr) {
      auto v = Convert<E>::from(item);
      if (!v) return std::nullopt;
      out.push_back(*v);
    }
    return out;
  }
};

template <class T>
std::string expected_text() {
  if constexpr (std::is_same_v<T, std::vector<int64_t>>)
    return "an array of integers";
  else if constexpr (std::is_same_v<T, std::vector<double>>)
    return "an array of numbers";
  else if constexpr (std::is_same_v<T, std::vector<std::string>>)
    return "an array of strings";
  else
    return Convert<T>::expected;
}

}  // namespace

ConfigNode::ConfigNode(std::shared_ptr<detail::ConfigDocument> doc, std::string path)
    : doc_(std::move(doc)), path_(std::move(path)) {}

std::string ConfigNode::key_path(std::string_view key) const { return join_path(path_, key); }

std::string ConfigNode::origin(std::string_view key) const { return doc_->origin_of(key_path(key)); }

void ConfigNode::fail(std::string_view key, const std::string& message) const {
  const std::string where = key_path(key);
  throw ConfigError(origin(key) + ": " + (where.empty() ? std::string("(root)") : where) + ": " + message);
}

bool ConfigNode::is_table_list(std::string_view key) const {
  const toml::node* n = table_of(*doc_, path_).get(key);
  if (!n || !n->is_array() || n->as_array()->empty()) return false;
  for (const auto& element : *n->as_array())
    if (!element.is_table()) return false;
  return true;
}

std::vector<ConfigNode> ConfigNode::table_list(std::string_view key) const {
  if (is_table(key)) return {table(key)};
  if (!is_table_list(key)) fail(key, "expected a table, or a list of tables ([[" + std::string(key) + "]])");
  std::vector<ConfigNode> out;
  const std::size_t n = table_of(*doc_, path_).get(key)->as_array()->size();
  for (std::size_t i = 0; i < n; ++i) out.emplace_back(doc_, key_path(key) + "." + std::to_string(i));
  return out;
}

bool ConfigNode::has(std::string_view key) const { return table_of(*doc_, path_).contains(key); }

bool ConfigNode::is_table(std::string_view key) const {
  const toml::node* n = table_of(*doc_, path_).get(key);
  return n && n->is_table();
}

ConfigNode ConfigNode::table(std::string_view key) const {
  const toml::node* n = table_of(*doc_, path_).get(key);
  if (!n) fail(key, "missing required table");
  if (!n->is_table()) fail(key, "expected a table, got " + detail::describe(*n));
  return ConfigNode(doc_, key_path(key));
}

std::vector<std::string> ConfigNode::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : table_of(*doc_, path_)) out.emplace_back(k.str());
  return out;
}

std::string ConfigNode::component() const {
  const toml::node* n = table_of(*doc_, path_).get("_component_");
  if (!n) return {};
  auto s = n->value_exact<std::string>();
  if (!s) fail("_component_", "expected a string, got " + detail::describe(*n));
  return *s;
}

std::string ConfigNode::to_toml() const {
  std::ostringstream out;
  out << toml::toml_formatter(table_of(*doc_, path_));
  return out.str();
}

template <class T>
std::optional<T> ConfigNode::get_optional(std::string_view key) const {
  const toml::node* n = table_of(*doc_, path_).get(key);
  if (!n) return std::nullopt;
  auto v = Convert<T>::from(*n);
  if (!v) fail(key, "expected " + expected_text<T>() + ", got " + detail::describe(*n));
  return v;
}

template <class T>
T ConfigNode::get(std::string_view key) const {
  auto v = get_optional<T>(key);
  if (!v) fail(key, "missing required key (" + expected_text<T>() + ")");
  return *v;
}

template <class T>
T ConfigNode::get(std::string_view key, T fallback) const {
  auto v = get_optional<T>(key);
  return v ? *v : fallback;
}

#define FT_INSTANTIATE_GET(T)                               \
  template T ConfigNode::get<T>(std::string_view) const;    \
  template T ConfigNode::get<T>(std::string_view, T) const; \
  template std::optional<T> ConfigNode::get_optional<T>(std::string_view) const;

FT_INSTANTIATE_GET(bool)
FT_INSTANTIATE_GET(int)
FT_INSTANTIATE_GET(int64_t)
FT_INSTANTIATE_GET(double)
FT_INSTANTIATE_GET(std::string)
FT_INSTANTIATE_GET(std::vector<int64_t>)
FT_INSTANTIATE_GET(std::vector<double>)
FT_INSTANTIATE_GET(std::vector<std::string>)

}  // namespace ft
