// Loading the run configuration: the TOML or YAML file, torchtune-style command-line overrides
// (`optimizer.lr=1e-4`, `~lr_scheduler`) and `${key}` interpolation, in that order.
#pragma once

#include "ft_host/config_document.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace fthost {

// Reads and parses a config file: YAML (torchtune's format) when it ends in .yaml or .yml,
// TOML otherwise; errors name the file and line.
std::shared_ptr<ft::detail::ConfigDocument> load_config_file(const std::string& path);

// Parses TOML text; `source_name` (a path or a label) prefixes the line and column of errors.
std::shared_ptr<ft::detail::ConfigDocument> load_config_text(const std::string& text, const std::string& source_name);

// Applies `key=value` (TOML value syntax; text that is not a TOML value is taken as a string)
// and `~key` (removes the key) in order.
void apply_overrides(ft::detail::ConfigDocument& doc, const std::vector<std::string>& overrides);

// Replaces `${dotted.key}` in every string. A string that is exactly `${key}` takes the
// referenced value with its type; otherwise the value is spliced in as text. Returns the dotted
// keys the references named (`oc.env` variables are not keys).
std::set<std::string> interpolate(ft::detail::ConfigDocument& doc);

// All three steps.
std::shared_ptr<ft::detail::ConfigDocument> load_config(const std::string& path,
                                                        const std::vector<std::string>& overrides);

}  // namespace fthost
