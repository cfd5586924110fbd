// `fthost run` and `fthost data`: the commands that need LibTorch. They live in the training
// library (lib/libfthost_training.so), which the executable loads only for them.
#pragma once

#include "config/invocation.h"

namespace fthost {

// Loads and checks the configuration with every plugin library loaded (training needs their
// factories), then trains or shows the data; returns the exit code.
int run_training_command(const Invocation& inv);

}  // namespace fthost
