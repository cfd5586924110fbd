// Loading lib/libfthost_training.so, the host's LibTorch half, for the commands that train.
//
// The executable does not link LibTorch, so `fthost --version`, ls, plugins and validate start
// in milliseconds; run, data and generate load the library and call its one entry point with
// the whole command line. OpenMP reads OMP_WAIT_POLICY once, when LibTorch's runtime loads: the
// host sets it (when unset) just before, so idle OpenMP workers sleep instead of spinning on
// cores the next matmul needs.
#pragma once

namespace fthost {

// The entry point's C name and type.
#define FTHOST_TRAINING_ENTRY "fthost_training_main"
using TrainingEntry = int(int argc, char** argv);

// Loads the library next to the executable (../lib) and runs the command line in it; returns
// its exit code. Prints `fthost: error: ...` and returns 2 when the library cannot load.
int run_in_training_library(int argc, char** argv);

}  // namespace fthost
