// The buffered writer both log formats sit on (TFRecordWriter, WandbTransactionLog): framed
// bytes collect in memory and reach the AppendOnlyFile in one whole-buffer write per flush(), so
// a reader of a file still being written (TensorBoard, `wandb sync`) never sees half a record,
// and a writer that gives up (abandon) adds nothing more to the file.
//
// Failures are AppendOnlyFile's: ft::Error naming the path, sticky once a write failed. A failed
// flush keeps its bytes buffered; close() then abandons them, so nothing is written after the
// failure.
#pragma once

#include "append_only_file.h"

#include <cstddef>
#include <string>
#include <string_view>

namespace ft_loggers {

class BufferedAppendFile {
 public:
  explicit BufferedAppendFile(std::string path, AppendOnlyFile::IfExists if_exists = AppendOnlyFile::IfExists::Refuse)
      : file_(std::move(path), if_exists) {}

  // Adds bytes to the buffer; they reach the file only with the next flush().
  void append(std::string_view bytes) { pending_.append(bytes.data(), bytes.size()); }
  void flush();
  void close();  // flushes first; the file is released even when that fails
  // Releases the file and drops the buffer unwritten: for a file whose failure was reported.
  void abandon() noexcept;
  void check_not_deleted() { file_.check_not_deleted(); }
  bool failed() const { return file_.failed(); }
  bool is_open() const { return file_.is_open(); }
  const std::string& path() const { return file_.path(); }
  std::size_t buffered_bytes() const { return pending_.size(); }

 private:
  AppendOnlyFile file_;
  std::string pending_;
};

}  // namespace ft_loggers
