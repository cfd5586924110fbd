// Checking a config table against a component schema (host side).
#pragma once

#include <ft/config.h>
#include <ft/schema.h>

#include <toml++/toml.h>

#include <string>
#include <vector>

namespace ft::detail {

bool value_matches(ValueType type, const toml::node& node);

// Checks `table` against `schema`: unknown keys (with suggestions), wrong types, missing
// required keys. Every problem becomes one line `<origin>: <path.key>: <message>`; on success
// the table gains the schema's defaults for the keys it does not set.
std::vector<std::string> check_and_complete(const ConfigNode& table, const Schema& schema);

}  // namespace ft::detail
