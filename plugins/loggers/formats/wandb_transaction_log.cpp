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
  pending_.assign(header, sizeof header);
  offset_ = sizeof header;
  flush();
}

void WandbTransactionLog::append_chunk(std::uint8_t type, std::string_view data) {
  const std::uint32_t crc = crc32_ieee(type, data);
  for (int i = 0; i < 4; ++i) pending_.push_back(static_cast<char>((crc >> (8 * i)) & 0xFF));
  pending_.push_back(static_cast<char>(data.size() & 0xFF));
  pending_.push_back(static_cast<char>((data.size() >> 8) & 0xFF));
  pending_.push_back(static_cast<char>(type));
  pending_.append(data.data(), data.size());
  offset_ += kChunkHeaderSize + data.size();
}

void WandbTransactionLog::append(std::string_view record) {
  bool first = true;
  while (true) {
    std::size_t space = kBlockSize - offset_ % kBlockSize;
    if (space < kChunkHeaderSize) {
      pending_.append(space, '\0');
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

void WandbTransactionLog::flush() {
  if (pending_.empty()) return;
  file_.write(pending_);
  pending_.clear();
}

void WandbTransactionLog::close() {
  if (!file_.is_open()) return;
  try {
    flush();
  } catch (...) {
    abandon();
    throw;
  }
  file_.close();
}

void WandbTransactionLog::abandon() noexcept {
  pending_.clear();
  file_.abandon();
}

}  // namespace ft_loggers
