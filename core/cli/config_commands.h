// `fthost cp SOURCE DEST` and `fthost ls configs`: torchtune's `tune cp` and `tune ls` for configs.
// cp copies a shipped config (by name) or any config file; a YAML source with a .toml destination
// is written as its TOML translation, which loads to the same configuration.
#pragma once

#include <string>
#include <vector>

namespace fthost {

struct CopyOptions {
  bool force = false;         // overwrite an existing destination
  bool make_parents = false;  // create the destination's missing directories
};

// `args`: SOURCE DEST. Prints where the copy went; throws ft::Error for anything it refuses.
int cmd_cp(const std::vector<std::string>& args, const CopyOptions& options);

// Prints the shipped configs' names, one a line.
int cmd_ls_configs();

// The TOML text of a YAML config file: its values as fthost reads them (nulls left out, OmegaConf's
// scalar types), `${...}` references kept for interpolation at load time. Comments are not carried.
std::string toml_translation_of_yaml(const std::string& yaml_path);

}  // namespace fthost
