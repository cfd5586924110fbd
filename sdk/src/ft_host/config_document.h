// Host side of the configuration: the parsed TOML document behind every ft::ConfigNode.
// Only the host (core/) and libftsdk include this; plugins see ft/config.h alone.
#pragma once

#include <ft/config.h>

#include <toml++/toml.h>

#include <map>
#include <memory>
#include <string>

namespace ft::detail {

class ConfigDocument {
 public:
  ConfigDocument(toml::table root, std::string source_name) : root_(std::move(root)), source_(std::move(source_name)) {}

  toml::table& root() { return root_; }
  const toml::table& root() const { return root_; }
  const std::string& source() const { return source_; }

  // Records that the value at a dotted path was set on the command line.
  void mark_overridden(const std::string& path) { overridden_[path] = true; }
  // Where a value came from: "command line", or the source name with the line of the key or of
  // its closest table when lines are recorded (YAML files; TOML messages name the file alone).
  std::string origin_of(const std::string& path) const;

  // Records the 1-based line a dotted path was written on.
  void set_line(const std::string& path, std::size_t line) { lines_[path] = line; }

  // The node at a dotted path, or nullptr.
  toml::node* find(std::string_view dotted_path);
  const toml::node* find(std::string_view dotted_path) const;

 private:
  toml::table root_;
  std::string source_;
  std::map<std::string, bool> overridden_;
  std::map<std::string, std::size_t> lines_;
};

// Human description of a TOML value for error messages: `string "fast"`, `integer 3`, `a table`.
std::string describe(const toml::node& node);

// Builds a root ConfigNode over a document.
inline ConfigNode root_node(std::shared_ptr<ConfigDocument> doc) { return ConfigNode(std::move(doc), ""); }

// Parses a TOML value written as text ("1e-4", "[1, 2]", "\"x\""); throws std::runtime_error.
toml::table parse_value_as_table(std::string_view value_text, const char* key = "v");

}  // namespace ft::detail
