// Crash-safe file writes for checkpoints: a file is written under a temporary name, fsynced and
// renamed into place, and its directory fsynced, so after a crash a path holds either the old
// contents or the complete new ones, never a torn file.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace ft_checkpointers {

// strerror(err); callers copy errno right after the failing call, before building a message
// (allocations may change errno).
std::string errno_text(int err);

// Writes all `size` bytes to `fd` (retrying short writes and EINTR); throws ft::Error naming `path`.
void write_all(int fd, const void* data, std::size_t size, const std::string& path);

// fsync of a directory, so renames and new entries in it survive a crash.
void fsync_directory(const std::string& dir);

// Creates `path` atomically: `fill` writes the contents to a descriptor of `<path>.tmp-<pid>`,
// which is then fsynced and renamed to `path`; the parent directory is fsynced. On any error
// the temporary file is removed and ft::Error is thrown.
void write_file_atomically(const std::string& path, const std::function<void(int fd)>& fill);
void write_text_file_atomically(const std::string& path, const std::string& text);

// Copies `from` to `to` with the same guarantees (following symlinks, as Hugging Face cache
// snapshots are symlinks to blobs).
void copy_file_atomically(const std::string& from, const std::string& to);

}  // namespace ft_checkpointers
