// TFRecord framing, the container of TensorBoard event files:
//   u64 length (LE) | u32 masked CRC-32C of the length bytes | data | u32 masked CRC-32C of data
// Records are buffered and written whole on flush() (BufferedAppendFile), so TensorBoard
// reading a file that is still being written never sees half a record.
#pragma once

#include "buffered_append_file.h"

#include <string>
#include <string_view>

namespace ft_loggers {

// One framed record.
std::string tfrecord_frame(std::string_view data);

class TFRecordWriter {
 public:
  explicit TFRecordWriter(std::string path) : file_(std::move(path)) {}

  void append(std::string_view data) { file_.append(tfrecord_frame(data)); }
  void flush() { file_.flush(); }
  void close() { file_.close(); }  // flushes first; the file is released even when that fails
  // Releases the file and drops unwritten records: for a file whose failure was reported.
  void abandon() noexcept { file_.abandon(); }
  void check_not_deleted() { file_.check_not_deleted(); }
  bool failed() const { return file_.failed(); }
  bool is_open() const { return file_.is_open(); }
  const std::string& path() const { return file_.path(); }

 private:
  BufferedAppendFile file_;
};

}  // namespace ft_loggers
