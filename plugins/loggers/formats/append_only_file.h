// A file that only grows: created exclusively (never truncating another run's log) or, where a
// format appends to what is there (torchtune's DiskLogger), opened for appending; written
// with whole-buffer writes so readers of a file still being written see only what was handed
// over complete.
//
// Failures are ft::Error naming the path, and they stick: after one write failed the file may
// end in half a record, so every later write throws the same error rather than append after
// it. A file deleted while open (its directory removed under the run) still accepts writes
// that nobody can ever read, so each write also checks that the file is still linked.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ft_loggers {

class AppendOnlyFile {
 public:
  enum class IfExists { Refuse, Append };
  // Throws ft::Error naming the path and errno if the file cannot be made (or, with Refuse, exists).
  explicit AppendOnlyFile(std::string path, IfExists if_exists = IfExists::Refuse);
  ~AppendOnlyFile() { abandon(); }
  AppendOnlyFile(const AppendOnlyFile&) = delete;
  AppendOnlyFile& operator=(const AppendOnlyFile&) = delete;

  void write(std::string_view bytes);
  // Throws if the file was deleted since it was opened, or an earlier write failed.
  void check_not_deleted();
  // Releases the file; throws if the system reports that written data did not reach it.
  void close();
  // Releases the file ignoring errors: for a file whose failure was already reported.
  void abandon() noexcept;
  bool is_open() const { return fd_ >= 0; }
  bool failed() const { return failure_.has_value(); }
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void fail(std::string message);
  void throw_if_failed() const;

  std::string path_;
  int fd_ = -1;
  std::optional<std::string> failure_;
};

}  // namespace ft_loggers
