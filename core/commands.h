// The host's subcommands: run, validate, ls, plugins.
#pragma once

#include <string>
#include <vector>

namespace fthost {

struct Invocation {
  std::string command = "run";
  std::string config_path;
  std::vector<std::string> plugin_dirs;
  std::vector<std::string> args;  // overrides, or the KIND filter of `ls`
  bool verbose = false;
};

std::string version_text();
int dispatch(const Invocation& inv);

}  // namespace fthost
