// The configs shipped with fthost (the source tree's configs/, installed as share/fthost/configs
// and linked there in the build tree, so one lookup serves both): `fthost ls configs` lists them,
// `fthost cp NAME DEST` copies one, and `--config NAME` runs one, as torchtune's `tune` does.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace fthost {

// The directory holding the shipped configs, next to the running binary.
std::string shipped_config_dir();

// Every shipped config's name: its path under the config directory without the extension
// (`qwen2_5/0.5B_full`), sorted, each once.
std::vector<std::string> shipped_config_names();

// The file of a shipped config named with or without its extension (find_config_named in
// shipped_config_dir()).
std::optional<std::string> find_shipped_config(const std::string& name);

// The file `name` names under `dir`: `dir/name` when the name has an extension, else the one file
// `dir/name.yaml`, `.yml` or `.toml`. Nullopt when there is none or the name leaves `dir`; an
// ft::Error naming the files when a name without extension matches more than one, rather than
// picking one of them.
std::optional<std::string> find_config_named(const std::string& dir, const std::string& name);

// What `--config X` reads: X when it is a file, else the shipped config named X. A name that is
// neither throws ft::ConfigError with the shipped configs it is close to; X is returned, and its
// loading reports it missing, only when it has a config file's extension and is close to none.
std::string resolve_config_argument(const std::string& config);

// `'X' is neither a file nor a shipped config; did you mean 'Y'? (...)`: what `cp` and `--config`
// say of a name they cannot find.
std::string unknown_config_message(const std::string& name);

// Whether a path names a config file by its extension (.yaml, .yml, .toml).
bool has_config_extension(const std::string& path);

}  // namespace fthost
