#include "tfrecord_writer.h"

#include "crc32c.h"

#include <cstdint>

namespace ft_loggers {

namespace {

void append_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

}  // namespace

std::string tfrecord_frame(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  const std::uint64_t length = data.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((length >> (8 * i)) & 0xFF));
  append_u32(out, mask_crc32c(crc32c(std::string_view(out.data(), 8))));
  out.append(data.data(), data.size());
  append_u32(out, mask_crc32c(crc32c(data)));
  return out;
}

}  // namespace ft_loggers
