// fthost: the command-line host. Runs the commands that need no LibTorch itself and loads the
// training library (training_library.h) for run, data and generate.
#include "cli/command_line.h"
#include "cli/training_library.h"

#include <ft/log.h>

int main(int argc, char** argv) {
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  const auto in_training_library = [](int n, char** args) { return fthost::run_in_training_library(n, args); };
  return fthost::run_command_line(
      argc, argv,
      {[&](int n, char** args, const fthost::Invocation&) { return in_training_library(n, args); },
       in_training_library});
}
