// Where the ctest fixtures write into the build tree (image_references/, vision_references/),
// found from the build's bin/fthost, which every test knows as FTHOST_BINARY.
#pragma once

#include <string>

namespace fttest {

inline std::string build_tree(const std::string& relative) {
  const std::string binary = FTHOST_BINARY;
  const std::string bin = binary.substr(0, binary.find_last_of('/'));
  return bin.substr(0, bin.find_last_of('/')) + "/" + relative;
}

}  // namespace fttest
