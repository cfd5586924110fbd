#include "cli/training_library.h"

#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/filesystem.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <iostream>
#include <string>

namespace fthost {

int run_in_training_library(int argc, char** argv) {
  if (!std::getenv("OMP_WAIT_POLICY")) setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  const boost::filesystem::path exe = boost::dll::program_location();
  const std::string path = (exe.parent_path().parent_path() / "lib" / "libfthost_training.so").string();
  // Local: the library's symbols are its own; plugins find the SDK through their own dependencies.
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    std::cerr << "fthost: error: cannot load the training library: " << dlerror() << "\n";
    return 2;
  }
  auto* entry = reinterpret_cast<TrainingEntry*>(dlsym(library, FTHOST_TRAINING_ENTRY));
  if (!entry) {
    std::cerr << "fthost: error: " << path << ": no " FTHOST_TRAINING_ENTRY " entry point (a stale build?)\n";
    return 2;
  }
  return entry(argc, argv);  // the library stays loaded until the process exits
}

}  // namespace fthost
