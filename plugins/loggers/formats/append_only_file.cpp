#include "append_only_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace ft_loggers {

AppendOnlyFile::AppendOnlyFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot create " + path_ + ": " + std::strerror(errno));
}

AppendOnlyFile::~AppendOnlyFile() { close(); }

void AppendOnlyFile::write(std::string_view bytes) {
  if (fd_ < 0) throw std::runtime_error(path_ + " is closed");
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error("write to " + path_ + " failed: " + std::strerror(errno));
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void AppendOnlyFile::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace ft_loggers
