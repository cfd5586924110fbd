// The GNU build ID of an ELF file: the linker's hash of what it wrote, kept by strip, by
// `cmake --install`'s RPATH rewrite, and by a wheel's unpacking, all of which change a library's
// size or modification time without changing its code.
#pragma once

#include <string>

namespace fthost {

// The build ID as lowercase hex, or "" when `path` is not a 64-bit little-endian ELF file or
// carries no NT_GNU_BUILD_ID note. Throws ft::Error naming `path` when it cannot be read.
std::string elf_build_id(const std::string& path);

}  // namespace fthost
