// Crash-safe files and directories: the one implementation of the durable-directory protocol
// that the host's training checkpoints and checkpointer plugins share.
//
// A file is written under a temporary name, fsynced, renamed into place, and its directory
// fsynced, so after a crash a path holds either the old contents or the complete new ones.
// A directory (a checkpoint) is built under a hidden staging name and installed with one
// rename, or one exchange when a directory of that name exists, so the name always refers to a
// complete directory. The hidden names this protocol creates next to `<dir>/<name>`, and who
// owns each (HiddenRole below spells them; nobody else builds or parses them):
//
//   .<name>.partial-<id>     staging: the directory being written. The saver creates it (the
//                            host's checkpoint manager for a training checkpoint, `id` rank 0's
//                            pid so every rank names the same one; a checkpointer plugin for a
//                            model directory it saves itself, `id` its pid), first removing one
//                            of that name an earlier failed save of the same id left, and hands
//                            it to install_directory. A plugin removes its staging directory
//                            when its save fails; the host leaves a failed one for the next start.
//   .<name>.old-<id>         the replaced directory, while the file system cannot exchange
//                            (install_directory, `id` this process's pid)
//   .<name>.deleting-<id>    a directory being deleted (delete_directory, the same)
//
// A crash can leave any of them. The host's rank 0 removes them from its output directory at
// its next start, before any save, for every `<name>` that is a checkpoint tag (`epoch_N`,
// `step_N`): fthost's remove_interrupted_checkpoints, which finds them with
// parse_hidden_sibling. `.<name>.old-<id>` without a `<name>` is the replaced directory,
// complete, whose replacement never arrived; it is renamed back instead.
#pragma once

#include <ft/export.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace ft {

// Writes all `size` bytes to `fd` (retrying short writes and EINTR); throws ft::Error naming `path`.
FT_API void write_all(int fd, const void* data, std::size_t size, const std::string& path);

// fsync of a file or a directory (a directory's fsync makes renames and new entries in it
// survive a crash); throws ft::Error naming it.
FT_API void fsync_path(const std::string& path);

// Creates or replaces `path` atomically: `fill` writes the contents to a descriptor of
// `<path>.tmp-<pid>`, which is then fsynced and renamed to `path`; the parent directory is
// fsynced. On any error the temporary file is removed and ft::Error is thrown.
FT_API void write_file_atomically(const std::string& path, const std::function<void(int fd)>& fill);
FT_API void write_text_file_atomically(const std::string& path, const std::string& text);

// Copies `from` to `to` with the same guarantees, following symlinks (Hugging Face cache
// snapshots are symlinks to blobs).
FT_API void copy_file_atomically(const std::string& from, const std::string& to);

// The renames install_directory performs. Each returns 0, or -1 with errno set, like rename(2);
// tests substitute them to observe or fail single steps.
struct DirectoryRenames {
  std::function<int(const std::string& from, const std::string& to)> rename;
  // Swaps two existing entries atomically (Linux renameat2 RENAME_EXCHANGE); errno EINVAL,
  // ENOSYS or ENOTSUP when the file system cannot.
  std::function<int(const std::string& a, const std::string& b)> exchange;
};
FT_API const DirectoryRenames& system_directory_renames();

// Makes the complete, synced directory `staged` (a sibling of `final_dir`, usually hidden) the
// directory `final_dir`, then fsyncs their parent. When `final_dir` exists it is replaced in one
// exchange and the old contents deleted; where the file system cannot exchange, the old
// directory is first renamed to `.<name>.old-<pid>`, `staged` renamed in, and the old one
// deleted, so at every moment the old directory or the new one is complete under one of the
// two names. On failure `final_dir` is what it was (the old one renamed back) and `staged` is
// left for the caller; throws ft::Error naming both paths.
FT_API void install_directory(const std::string& staged, const std::string& final_dir,
                              const DirectoryRenames& renames = system_directory_renames());

// Deletes `dir` by renaming it to `.<name>.deleting-<pid>` (fsynced) first, so a crash while
// deleting never leaves a partly deleted directory under its name. Throws ft::Error naming it.
FT_API void delete_directory(const std::string& dir);

// The hidden names above, by what they hold.
enum class HiddenRole { Staging, Replaced, Deleting };

// The role's word in a hidden name: "partial", "old", "deleting".
FT_API const char* hidden_role_word(HiddenRole role);

// `<parent>/.<name>.<word>-<id>` for `<parent>/<name>` ("a/b/" names b).
FT_API std::string hidden_sibling(const std::string& dir, HiddenRole role, std::int64_t id);
// With this process's pid as `id`.
FT_API std::string hidden_sibling(const std::string& dir, HiddenRole role);

// Where a save of `final_dir` is staged: hidden_sibling(final_dir, HiddenRole::Staging, id).
FT_API std::string staging_directory(const std::string& final_dir, std::int64_t id);

struct HiddenSiblingName {
  std::string name;  // the directory it belongs to, `<name>`
  HiddenRole role;
  std::string id;  // decimal digits
};
// Recognises a directory entry's file name `.<name>.<word>-<digits>` as one of the hidden names
// above; anything else (another word, a non-numeric id, an empty name) is nullopt. `<name>` may
// itself contain dots: the role is the last dotted part before the id.
FT_API std::optional<HiddenSiblingName> parse_hidden_sibling(const std::string& file_name);

}  // namespace ft
