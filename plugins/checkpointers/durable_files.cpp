#include "durable_files.h"

#include <ft/errors.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace ft_checkpointers {

namespace {

// Closes the descriptor on every path out of a scope.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Closes now so that a failing close (a deferred write error on some file systems) is reported.
  void close(const std::string& path) {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      const int err = errno;
      throw ft::Error(path + ": close failed: " + errno_text(err));
    }
  }

 private:
  int fd_;
};

std::string parent_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

std::string errno_text(int err) { return std::strerror(err); }

void write_all(int fd, const void* data, std::size_t size, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    // Linux writes at most ~2 GiB per call; larger tensors take several.
    const ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      throw ft::Error(path + ": write failed: " + errno_text(err));
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

void fsync_directory(const std::string& dir) {
  FileDescriptor fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int err = errno;
    throw ft::Error(dir + ": cannot open directory to sync it: " + errno_text(err));
  }
  if (::fsync(fd.get()) != 0) {
    const int err = errno;
    throw ft::Error(dir + ": fsync failed: " + errno_text(err));
  }
}

void write_file_atomically(const std::string& path, const std::function<void(int fd)>& fill) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  try {
    FileDescriptor fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) {
      const int err = errno;
      throw ft::Error(tmp + ": cannot create: " + errno_text(err));
    }
    fill(fd.get());
    if (::fsync(fd.get()) != 0) {
      const int err = errno;
      throw ft::Error(tmp + ": fsync failed: " + errno_text(err));
    }
    fd.close(tmp);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      const int err = errno;
      throw ft::Error("cannot rename " + tmp + " to " + path + ": " + errno_text(err));
    }
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  fsync_directory(parent_of(path));
}

void write_text_file_atomically(const std::string& path, const std::string& text) {
  write_file_atomically(path, [&](int fd) { write_all(fd, text.data(), text.size(), path); });
}

void copy_file_atomically(const std::string& from, const std::string& to) {
  FileDescriptor in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) {
    const int err = errno;
    throw ft::Error(from + ": cannot open: " + errno_text(err));
  }
  write_file_atomically(to, [&](int out) {
    std::vector<char> buffer(1 << 20);
    for (;;) {
      const ssize_t n = ::read(in.get(), buffer.data(), buffer.size());
      if (n < 0) {
        const int err = errno;
        if (err == EINTR) continue;
        throw ft::Error(from + ": read failed: " + errno_text(err));
      }
      if (n == 0) break;
      write_all(out, buffer.data(), static_cast<std::size_t>(n), to);
    }
  });
}

}  // namespace ft_checkpointers
