// The host's subcommands: run, validate, data, ls, plugins, cp.
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
  std::vector<std::string> args;  // overrides, the KIND filter of `ls`, or cp's SOURCE DEST
  bool verbose = false;
  DataViewOptions data;
  bool force = false;         // cp: overwrite the destination
  bool make_parents = false;  // cp: create the destination's directories
};

std::string version_text();
int dispatch(const Invocation& inv);

}  // namespace fthost
