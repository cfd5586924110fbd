// A new file that only grows: created exclusively (never truncating another run's log), written
// with whole-buffer writes so readers of a file still being written see only what was handed
// over complete.
#pragma once

#include <string>
#include <string_view>

namespace ft_loggers {

class AppendOnlyFile {
 public:
  // Throws std::runtime_error naming the path and errno if the file exists or cannot be made.
  explicit AppendOnlyFile(std::string path);
  ~AppendOnlyFile();
  AppendOnlyFile(const AppendOnlyFile&) = delete;
  AppendOnlyFile& operator=(const AppendOnlyFile&) = delete;

  void write(std::string_view bytes);
  void close();
  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace ft_loggers
