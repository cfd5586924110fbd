// wandb's transaction log, the `.wandb` file `wandb sync` uploads (wandb/sdk/internal/
// datastore.py; core/pkg/leveldb in wandb-core):
//   header  ":W&B" | u16 LE 0xBEE1 | u8 version 0
//   then 32 KiB blocks (the first one shortened by the header) of chunks
//   chunk   u32 LE CRC-32/IEEE over (type byte, data) | u16 LE length | u8 type | data
// A record too big for the rest of its block is split FIRST, MIDDLE..., LAST; a chunk never
// crosses a block, and a block tail too short for a chunk header is zero-filled.
#pragma once

#include "buffered_append_file.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace ft_loggers {

namespace wandb_log {
constexpr std::size_t kBlockSize = 32768;
constexpr std::size_t kChunkHeaderSize = 7;
constexpr std::uint8_t kFull = 1, kFirst = 2, kMiddle = 3, kLast = 4;
}  // namespace wandb_log

class WandbTransactionLog {
 public:
  // Creates the file (never overwrites one) and writes the header. Failures are
  // BufferedAppendFile's: ft::Error naming the path, sticky once a write failed.
  explicit WandbTransactionLog(std::string path);

  // One serialized wandb_internal.Record. Buffered until flush(); chunks are placed by the
  // logical file offset, so buffering does not change the layout.
  void append(std::string_view record);
  void flush() { file_.flush(); }
  void close() { file_.close(); }  // flushes first; the file is released even when that fails
  // Releases the file and drops unwritten records: for a file whose failure was reported.
  void abandon() noexcept { file_.abandon(); }
  bool failed() const { return file_.failed(); }
  bool is_open() const { return file_.is_open(); }
  const std::string& path() const { return file_.path(); }

 private:
  void append_chunk(std::uint8_t type, std::string_view data);
  BufferedAppendFile file_;
  std::uint64_t offset_ = 0;  // bytes in the file once the buffered ones are written
};

}  // namespace ft_loggers
