#include "wandb_transaction_log.h"

#include <zlib.h>

namespace ft_loggers {

using namespace wandb_log;

namespace {

std::uint32_t crc32_ieee(std::uint8_t type, std::string_view data) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  const Bytef type_byte = type;
  crc = ::crc32(crc, &type_byte, 1);
  crc = ::crc32(crc, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size()));
  return static_cast<std::uint32_t>(crc);
}

}  // namespace

WandbTransactionLog::WandbTransactionLog(std::string path) : file_(std::move(path)) {
  const char header[7] = {':', 'W', '&', 'B', static_cast<char>(0xE1), static_cast<char>(0xBE), 0};
  file_.append(std::string_view(header, sizeof header));
  offset_ = sizeof header;
  flush();
}

void WandbTransactionLog::append_chunk(std::uint8_t type, std::string_view data) {
  const std::uint32_t crc = crc32_ieee(type, data);
  char header[kChunkHeaderSize];
  for (int i = 0; i < 4; ++i) header[i] = static_cast<char>((crc >> (8 * i)) & 0xFF);
  header[4] = static_cast<char>(data.size() & 0xFF);
  header[5] = static_cast<char>((data.size() >> 8) & 0xFF);
  header[6] = static_cast<char>(type);
  file_.append(std::string_view(header, sizeof header));
  file_.append(data);
  offset_ += kChunkHeaderSize + data.size();
}

void WandbTransactionLog::append(std::string_view record) {
  bool first = true;
  while (true) {
    std::size_t space = kBlockSize - offset_ % kBlockSize;
    if (space < kChunkHeaderSize) {
      static const char zeros[kChunkHeaderSize] = {};
      file_.append(std::string_view(zeros, space));
      offset_ += space;
      space = kBlockSize;
    }
    const std::size_t room = space - kChunkHeaderSize;
    if (record.size() <= room) {
      append_chunk(first ? kFull : kLast, record);
      return;
    }
    // As datastore.py does, a block with exactly a header's room left gets an empty FIRST
    // chunk rather than padding: its readers only skip tails shorter than a header.
    append_chunk(first ? kFirst : kMiddle, record.substr(0, room));
    record.remove_prefix(room);
    first = false;
  }
}

}  // namespace ft_loggers
