// TFRecord framing, the container of TensorBoard event files:
//   u64 length (LE) | u32 masked CRC-32C of the length bytes | data | u32 masked CRC-32C of data
// Records are buffered and written whole on flush(), so TensorBoard reading a file that is
// still being written never sees half a record.
#pragma once

#include "append_only_file.h"

#include <string>
#include <string_view>

namespace ft_loggers {

// One framed record.
std::string tfrecord_frame(std::string_view data);

class TFRecordWriter {
 public:
  explicit TFRecordWriter(std::string path) : file_(std::move(path)) {}
  ~TFRecordWriter();

  void append(std::string_view data) { pending_ += tfrecord_frame(data); }
  void flush();
  void close();  // flushes first
  const std::string& path() const { return file_.path(); }

 private:
  AppendOnlyFile file_;
  std::string pending_;
};

}  // namespace ft_loggers
