#include "plugin_host/elf_build_id.h"

#include <ft/errors.h>

#include <elf.h>

#include <cstring>
#include <fstream>
#include <vector>

namespace fthost {

namespace {

constexpr std::uint32_t kNoteAlignment = 4;

std::size_t aligned(std::size_t n) { return (n + kNoteAlignment - 1) / kNoteAlignment * kNoteAlignment; }

bool read_at(std::ifstream& in, std::uint64_t offset, void* out, std::size_t size) {
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(static_cast<char*>(out), static_cast<std::streamsize>(size));
  return static_cast<std::size_t>(in.gcount()) == size;
}

// The descriptor of the first GNU build-ID note among `notes`, as hex; "" when there is none.
std::string build_id_in_notes(const std::vector<unsigned char>& notes) {
  std::size_t at = 0;
  while (at + sizeof(Elf64_Nhdr) <= notes.size()) {
    Elf64_Nhdr header;
    std::memcpy(&header, notes.data() + at, sizeof header);
    const std::size_t name_at = at + sizeof header;
    const std::size_t desc_at = name_at + aligned(header.n_namesz);
    const std::size_t next = desc_at + aligned(header.n_descsz);
    if (next > notes.size() || next <= at) return "";
    if (header.n_type == NT_GNU_BUILD_ID && header.n_namesz == 4 &&
        std::memcmp(notes.data() + name_at, "GNU", 4) == 0) {
      static constexpr char kHex[] = "0123456789abcdef";
      std::string hex;
      for (std::size_t i = 0; i < header.n_descsz; ++i) {
        hex += kHex[notes[desc_at + i] >> 4];
        hex += kHex[notes[desc_at + i] & 0xf];
      }
      return hex;
    }
    at = next;
  }
  return "";
}

}  // namespace

std::string elf_build_id(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ft::Error(path + ": cannot be opened to read its build ID");
  Elf64_Ehdr file_header;
  if (!read_at(in, 0, &file_header, sizeof file_header)) return "";
  if (std::memcmp(file_header.e_ident, ELFMAG, SELFMAG) != 0 || file_header.e_ident[EI_CLASS] != ELFCLASS64 ||
      file_header.e_ident[EI_DATA] != ELFDATA2LSB || file_header.e_phentsize != sizeof(Elf64_Phdr))
    return "";
  for (std::uint16_t i = 0; i < file_header.e_phnum; ++i) {
    Elf64_Phdr segment;
    if (!read_at(in, file_header.e_phoff + std::uint64_t{i} * sizeof segment, &segment, sizeof segment)) return "";
    // A note segment is small; anything larger is not one this reader trusts.
    if (segment.p_type != PT_NOTE || segment.p_filesz > (1u << 16)) continue;
    std::vector<unsigned char> notes(segment.p_filesz);
    if (!read_at(in, segment.p_offset, notes.data(), notes.size())) return "";
    std::string id = build_id_in_notes(notes);
    if (!id.empty()) return id;
  }
  return "";
}

}  // namespace fthost
