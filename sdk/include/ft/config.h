// Read-only, typed view of one table of the run configuration.
//
// Every accessor that fails throws ft::ConfigError naming where the value came from and
// its full dotted path, e.g. `run.toml: optimizer.lr: expected a number, got string "fast"`.
// The TOML parser stays behind this header so plugins compile without it.
#pragma once

#include <ft/export.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ft {

namespace detail {
class ConfigDocument;
}

class FT_API ConfigNode {
 public:
  ConfigNode(std::shared_ptr<detail::ConfigDocument> doc, std::string path);

  // Supported T: bool, int, int64_t, double, std::string, std::vector<int64_t>,
  // std::vector<double>, std::vector<std::string>. A double accepts an integer value.
  template <class T>
  T get(std::string_view key) const;  // required: a missing key is an error
  template <class T>
  T get(std::string_view key, T fallback) const;
  template <class T>
  std::optional<T> get_optional(std::string_view key) const;

  bool has(std::string_view key) const;
  bool is_table(std::string_view key) const;
  ConfigNode table(std::string_view key) const;  // a sub-table; error if absent or not a table
  // A non-empty array of tables (TOML `[[key]]`), addressed as "key.0", "key.1", ...
  bool is_table_list(std::string_view key) const;
  // The table, or every table of the list; error if it is neither.
  std::vector<ConfigNode> table_list(std::string_view key) const;
  std::vector<std::string> keys() const;  // in file order

  // The `_component_` of this table, or empty.
  std::string component() const;

  // Dotted path of this table ("" for the root) and of a key inside it.
  const std::string& path() const { return path_; }
  std::string key_path(std::string_view key) const;
  // Where a key's value came from: the config file name, or "command line".
  std::string origin(std::string_view key = {}) const;

  // This table rendered as TOML (the effective configuration).
  std::string to_toml() const;

  // Throws ConfigError formatted as `<origin>: <path.key>: <message>`.
  [[noreturn]] void fail(std::string_view key, const std::string& message) const;

  const std::shared_ptr<detail::ConfigDocument>& document() const { return doc_; }

 private:
  std::shared_ptr<detail::ConfigDocument> doc_;
  std::string path_;
};

}  // namespace ft
