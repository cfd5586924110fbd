// torchtune's YAML configs, read into the same document as TOML: nulls drop their key (OmegaConf's
// `seed: null` is the key left out), unquoted scalars take OmegaConf's types, and every key keeps
// its line so configuration errors name the file, line and key.
#pragma once

#include "ft_host/config_document.h"

#include <memory>
#include <string>

namespace fthost {

// Whether a config path is YAML by its extension (.yaml, .yml).
bool is_yaml_path(const std::string& path);

// Parses YAML text; `source_name` (a path or a label) prefixes the line of errors.
std::shared_ptr<ft::detail::ConfigDocument> load_yaml_config_text(const std::string& text,
                                                                  const std::string& source_name);

}  // namespace fthost
