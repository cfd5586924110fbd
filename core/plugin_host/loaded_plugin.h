// What the host knows of one plugin library, loaded or described by its manifest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fthost {

struct LoadedPlugin {
  std::string path;
  std::string name;
  std::string version;
  std::uint32_t abi_major = 0;
  std::uint32_t abi_minor = 0;
  std::vector<std::string> components;
  bool from_manifest = false;  // described by its manifest; the library itself was not loaded
};

}  // namespace fthost
