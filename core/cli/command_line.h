// The fthost command line, shared by the executable and the training library: the executable
// runs it with TrainingCommands that load lib/libfthost_training.so, which runs it again with
// TrainingCommands that train (the command line is parsed twice; that costs microseconds).
#pragma once

#include "cli/commands.h"

#include <functional>

namespace fthost {

struct TrainingCommands {
  // run and data, with the parsed invocation and the command line it came from.
  std::function<int(int argc, char** argv, const Invocation& inv)> run_or_data;
  // `fthost generate ...` (argv[1] is "generate"), which has its own options.
  std::function<int(int argc, char** argv)> generate;
};

// Parses the command line and runs the command; returns the process's exit code. Errors are
// printed as `fthost: error: ...` (exit 2) or `fthost: internal error: ...` (exit 3).
int run_command_line(int argc, char** argv, const TrainingCommands& training);

}  // namespace fthost
