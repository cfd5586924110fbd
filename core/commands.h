// The host's subcommands: run, validate, data, ls, plugins.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fthost {

// The options of `fthost data`.
struct DataViewOptions {
  std::optional<std::int64_t> samples;  // unset: a few in text, all with --json
  bool packed = false;                  // --packed: every dataset packs, as with dataset.packed = true
  bool json = false;
};

struct Invocation {
  std::string command = "run";
  std::string config_path;
  std::vector<std::string> plugin_dirs;
  std::vector<std::string> args;  // overrides, or the KIND filter of `ls`
  bool verbose = false;
  DataViewOptions data;
};

std::string version_text();
int dispatch(const Invocation& inv);

}  // namespace fthost
