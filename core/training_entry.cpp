// The training library's entry point (lib/libfthost_training.so): the fthost command line, run
// with the commands that need LibTorch. The executable calls it through training_library.h.
#include "cli/command_line.h"
#include "cli/training_library.h"
#include "generate/generate_command.h"
#include "train/training_commands.h"

extern "C" __attribute__((visibility("default"))) int fthost_training_main(int argc, char** argv) {
  static_assert(std::is_same_v<decltype(fthost_training_main), fthost::TrainingEntry>);
  return fthost::run_command_line(
      argc, argv,
      {[](int, char**, const fthost::Invocation& inv) { return fthost::run_training_command(inv); },
       [](int n, char** args) { return fthost::generate_main(n - 1, args + 1); }});
}
