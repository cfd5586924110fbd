#include <ft/durable_files.h>

#include <ft/errors.h>
#include <ft/log.h>
#include <ft/text.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ft {

namespace {

namespace fs = std::filesystem;

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
      throw Error(path + ": close failed: " + errno_text(err));
    }
  }

 private:
  int fd_;
};

std::string parent_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

bool exists_unfollowed(const std::string& path) {
  struct stat info;
  return ::lstat(path.c_str(), &info) == 0;
}

// Removes a directory tree; throws naming it.
void remove_tree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) throw Error(path + ": cannot remove: " + ec.message());
}

// The old directory is out of sight already; failing to remove it wastes space but loses nothing.
void remove_replaced(const std::string& path, const std::string& final_dir) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec)
    ft::log::warn("{} is installed, but its replaced contents in {} could not be removed: {}", final_dir, path,
                  ec.message());
}

void rename_or_throw(const DirectoryRenames& renames, const std::string& from, const std::string& to) {
  if (renames.rename(from, to) != 0) {
    const int err = errno;
    throw Error("cannot rename " + from + " to " + to + ": " + errno_text(err));
  }
}

bool cannot_exchange_here(int err) { return err == EINVAL || err == ENOSYS || err == ENOTSUP; }

// File systems without the exchange: old aside, new in, old deleted. A crash in between leaves
// the old directory complete under the hidden `.old-` name, never a torn `final_dir`.
void install_moving_aside(const std::string& staged, const std::string& final_dir, const DirectoryRenames& renames) {
  const std::string aside = hidden_sibling(final_dir, HiddenRole::Replaced);
  remove_tree(aside);  // left by an earlier failed install of this process
  rename_or_throw(renames, final_dir, aside);
  if (renames.rename(staged, final_dir) != 0) {
    const int err = errno;
    std::string message = "cannot rename " + staged + " to " + final_dir + ": " + errno_text(err);
    if (renames.rename(aside, final_dir) != 0) {
      const int restore_err = errno;
      message +=
          "; the replaced directory is still at " + aside + " (moving it back failed: " + errno_text(restore_err) + ")";
    }
    throw Error(message);
  }
  fsync_path(parent_of(final_dir));
  remove_replaced(aside, final_dir);
}

}  // namespace

void write_all(int fd, const void* data, std::size_t size, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    // Linux writes at most ~2 GiB per call; larger tensors take several.
    const ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      throw Error(path + ": write failed: " + errno_text(err));
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

void fsync_path(const std::string& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int err = errno;
    throw Error(path + ": cannot open to sync it: " + errno_text(err));
  }
  if (::fsync(fd.get()) != 0) {
    const int err = errno;
    throw Error(path + ": fsync failed: " + errno_text(err));
  }
}

void write_file_atomically(const std::string& path, const std::function<void(int fd)>& fill) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  try {
    FileDescriptor fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) {
      const int err = errno;
      throw Error(tmp + ": cannot create: " + errno_text(err));
    }
    fill(fd.get());
    if (::fsync(fd.get()) != 0) {
      const int err = errno;
      throw Error(tmp + ": fsync failed: " + errno_text(err));
    }
    fd.close(tmp);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      const int err = errno;
      throw Error("cannot rename " + tmp + " to " + path + ": " + errno_text(err));
    }
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  fsync_path(parent_of(path));
}

void write_text_file_atomically(const std::string& path, const std::string& text) {
  write_file_atomically(path, [&](int fd) { write_all(fd, text.data(), text.size(), path); });
}

void copy_file_atomically(const std::string& from, const std::string& to) {
  FileDescriptor in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) {
    const int err = errno;
    throw Error(from + ": cannot open: " + errno_text(err));
  }
  write_file_atomically(to, [&](int out) {
    std::vector<char> buffer(1 << 20);
    for (;;) {
      const ssize_t n = ::read(in.get(), buffer.data(), buffer.size());
      if (n < 0) {
        const int err = errno;
        if (err == EINTR) continue;
        throw Error(from + ": read failed: " + errno_text(err));
      }
      if (n == 0) break;
      write_all(out, buffer.data(), static_cast<std::size_t>(n), to);
    }
  });
}

const DirectoryRenames& system_directory_renames() {
  static const DirectoryRenames renames{
      [](const std::string& from, const std::string& to) { return std::rename(from.c_str(), to.c_str()); },
      [](const std::string& a, const std::string& b) {
        return ::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE);
      }};
  return renames;
}

void install_directory(const std::string& staged, const std::string& final_dir, const DirectoryRenames& renames) {
  if (!exists_unfollowed(final_dir)) {
    rename_or_throw(renames, staged, final_dir);
    fsync_path(parent_of(final_dir));
    return;
  }
  // Same name again (a run resumed from an older checkpoint): swap in one step, so `final_dir`
  // always names a complete directory; the old one ends up under the staged name and is deleted.
  if (renames.exchange(staged, final_dir) == 0) {
    fsync_path(parent_of(final_dir));
    remove_replaced(staged, final_dir);
    return;
  }
  const int err = errno;
  if (!cannot_exchange_here(err))
    throw Error("cannot replace " + final_dir + " with " + staged + ": " + errno_text(err));
  install_moving_aside(staged, final_dir, renames);
}

void delete_directory(const std::string& dir) {
  const std::string hidden = hidden_sibling(dir, HiddenRole::Deleting);
  remove_tree(hidden);  // left by an earlier failed deletion of this process
  if (std::rename(dir.c_str(), hidden.c_str()) != 0) {
    const int err = errno;
    throw Error("cannot delete " + dir + ": renaming it to " + hidden + " failed: " + errno_text(err));
  }
  fsync_path(parent_of(dir));
  remove_tree(hidden);
}

const char* hidden_role_word(HiddenRole role) {
  switch (role) {
    case HiddenRole::Staging: return "partial";
    case HiddenRole::Replaced: return "old";
    case HiddenRole::Deleting: return "deleting";
  }
  return "";
}

std::string hidden_sibling(const std::string& dir, HiddenRole role, std::int64_t id) {
  fs::path path(dir);
  if (!path.has_filename()) path = path.parent_path();  // "a/b/" names b
  return (path.parent_path() /
          ("." + path.filename().string() + "." + hidden_role_word(role) + "-" + std::to_string(id)))
      .string();
}

std::string hidden_sibling(const std::string& dir, HiddenRole role) {
  return hidden_sibling(dir, role, static_cast<std::int64_t>(::getpid()));
}

std::string staging_directory(const std::string& final_dir, std::int64_t id) {
  return hidden_sibling(final_dir, HiddenRole::Staging, id);
}

// Matched by hand rather than with std::regex: a PyTorch wheel exports std::regex instantiations
// built by another compiler, and a process linking one crashed in them.
std::optional<HiddenSiblingName> parse_hidden_sibling(const std::string& file_name) {
  if (file_name.size() < 2 || file_name[0] != '.') return std::nullopt;
  const std::size_t dash = file_name.rfind('-');
  if (dash == std::string::npos || dash + 1 == file_name.size() ||
      file_name.find_first_not_of("0123456789", dash + 1) != std::string::npos)
    return std::nullopt;
  const std::size_t dot = file_name.rfind('.', dash);
  if (dot == std::string::npos || dot < 2) return std::nullopt;  // ".<word>-1" has no name
  const std::string word = file_name.substr(dot + 1, dash - dot - 1);
  for (HiddenRole role : {HiddenRole::Staging, HiddenRole::Replaced, HiddenRole::Deleting})
    if (word == hidden_role_word(role))
      return HiddenSiblingName{file_name.substr(1, dot - 1), role, file_name.substr(dash + 1)};
  return std::nullopt;
}

}  // namespace ft
