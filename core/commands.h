// The host's subcommands: the command line's invocation, and the commands that need no LibTorch:
// validate, ls, plugins, cp (run and data: training_commands.h).
#pragma once

#include <ft/kind.h>
#include <ft/registry.h>

#include <cstdint>
#include <iosfwd>
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
  bool force = false;          // cp: overwrite the destination
  bool make_parents = false;   // cp: create the destination's directories
  std::string write_manifest;  // plugins --write-manifest LIB: the library whose manifest to write
};

std::string version_text();

// run and data: the commands that train or read data, and so need LibTorch (training_library.h).
bool is_training_command(const Invocation& inv);
// Errors in the command line's combination of options, before anything is loaded.
void check_invocation(const Invocation& inv);
// ls, plugins, cp and validate: the commands that run without LibTorch.
int dispatch(const Invocation& inv);

// `fthost ls [KIND] [-v]`'s listing of `registry`.
void print_components(std::ostream& out, const ft::Registry& registry, std::optional<ft::Kind> filter, bool verbose);

}  // namespace fthost
