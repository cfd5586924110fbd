#include "append_only_file.h"

#include <ft/errors.h>
#include <ft/text.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace ft_loggers {

AppendOnlyFile::AppendOnlyFile(std::string path, IfExists if_exists) : path_(std::move(path)) {
  const int exclusive = if_exists == IfExists::Refuse ? O_EXCL : 0;
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | exclusive | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int err = errno;
    throw ft::Error((exclusive ? "cannot create " : "cannot open ") + path_ + ": " + ft::errno_text(err));
  }
}

void AppendOnlyFile::write(std::string_view bytes) {
  throw_if_failed();
  if (fd_ < 0) throw ft::Error("cannot write " + path_ + ": the file is closed");
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      fail("cannot write " + path_ + ": " + ft::errno_text(err));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  check_not_deleted();
}

void AppendOnlyFile::check_not_deleted() {
  throw_if_failed();
  if (fd_ < 0) return;
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    fail("cannot check " + path_ + ": " + ft::errno_text(err));
  }
  if (st.st_nlink == 0)
    fail("cannot write " + path_ +
         ": the file was deleted while the run was writing it (was its directory removed?); what was logged after "
         "that is lost");
}

void AppendOnlyFile::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  // Linux releases the descriptor even when close fails, so it is never retried.
  if (::close(fd) != 0 && errno != EINTR) {
    const int err = errno;
    fail("cannot close " + path_ + ": " + ft::errno_text(err));
  }
}

void AppendOnlyFile::abandon() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void AppendOnlyFile::fail(std::string message) {
  if (!failure_) failure_ = std::move(message);
  throw ft::Error(*failure_);
}

void AppendOnlyFile::throw_if_failed() const {
  if (failure_) throw ft::Error(*failure_);
}

}  // namespace ft_loggers
