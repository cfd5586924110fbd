// The host's subcommands: run, validate, ls, plugins, cp.
#pragma once

#include <string>
#include <vector>

namespace fthost {

struct Invocation {
  std::string command = "run";
  std::string config_path;
  std::vector<std::string> plugin_dirs;
  std::vector<std::string> args;  // overrides, the KIND filter of `ls`, or cp's SOURCE DEST
  bool verbose = false;
  bool force = false;         // cp: overwrite the destination
  bool make_parents = false;  // cp: create the destination's directories
};

std::string version_text();
int dispatch(const Invocation& inv);

}  // namespace fthost
