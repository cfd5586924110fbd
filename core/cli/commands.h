// The host's subcommands: the command line's invocation, and the commands that need no LibTorch:
// validate, ls, plugins, cp (run and data: training_commands.h).
#pragma once

#include "config/invocation.h"

#include <ft/kind.h>
#include <ft/registry.h>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace fthost {

std::string version_text();

// ls, plugins, cp and validate: the commands that run without LibTorch.
int dispatch(const Invocation& inv);

// `fthost ls [KIND] [-v]`'s listing of `registry`.
void print_components(std::ostream& out, const ft::Registry& registry, std::optional<ft::Kind> filter, bool verbose);

}  // namespace fthost
