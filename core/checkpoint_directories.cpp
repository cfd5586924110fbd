#include "checkpoint_directories.h"

#include "training_state.h"

#include <ft/errors.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>

#include <fcntl.h>
#include <unistd.h>

namespace fthost {

namespace {

namespace fs = std::filesystem;

std::string errno_text(int err) { return std::strerror(err); }

bool is_checkpoint_tag(const std::string& name) {
  static const std::regex pattern("(epoch|step)_[0-9]+");
  return std::regex_match(name, pattern);
}

bool is_leftover_name(const std::string& name) {
  static const std::regex pattern("\\.(epoch|step)_[0-9]+\\.(partial|deleting|old)-[0-9]+");
  return std::regex_match(name, pattern);
}

}  // namespace

std::vector<CheckpointEntry> complete_checkpoints(const std::string& output_dir) {
  std::vector<CheckpointEntry> out;
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec)) return out;
  for (const fs::directory_entry& entry : fs::directory_iterator(output_dir)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || !is_checkpoint_tag(name)) continue;
    const std::string manifest = manifest_path_in(entry.path().string());
    if (!fs::exists(manifest)) continue;  // a plain model directory (an older run's epoch_N)
    out.push_back({name, entry.path().string(), read_manifest(manifest).progress.steps_run});
  }
  std::sort(out.begin(), out.end(), [](const CheckpointEntry& a, const CheckpointEntry& b) {
    const bool a_epoch = a.tag.rfind("epoch_", 0) == 0, b_epoch = b.tag.rfind("epoch_", 0) == 0;
    return std::tie(a.steps_run, a_epoch, a.tag) < std::tie(b.steps_run, b_epoch, b.tag);
  });
  return out;
}

std::vector<std::string> remove_interrupted_checkpoints(const std::string& output_dir) {
  std::vector<std::string> removed;
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec)) return removed;
  for (const fs::directory_entry& entry : fs::directory_iterator(output_dir)) {
    if (!is_leftover_name(entry.path().filename().string())) continue;
    fs::remove_all(entry.path());
    removed.push_back(entry.path().string());
  }
  if (!removed.empty()) fsync_path(output_dir);
  return removed;
}

std::string staging_dir_for(const std::string& output_dir, const std::string& tag, std::int64_t run_id) {
  return (fs::path(output_dir) / ("." + tag + ".partial-" + std::to_string(run_id))).string();
}

void fsync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw ft::Error(path + ": cannot open to sync it: " + errno_text(err));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw ft::Error(path + ": fsync failed: " + errno_text(err));
}

void write_text_durably(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    const int err = errno;
    throw ft::Error(tmp + ": cannot create: " + errno_text(err));
  }
  const bool written =
      std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  const int err = errno;
  if (std::fclose(f) != 0 || !written) {
    ::unlink(tmp.c_str());
    throw ft::Error(tmp + ": write failed: " + errno_text(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_err = errno;
    ::unlink(tmp.c_str());
    throw ft::Error("cannot rename " + tmp + " to " + path + ": " + errno_text(rename_err));
  }
  fsync_path(fs::path(path).parent_path().string());
}

void install_checkpoint(const std::string& staging, const std::string& final_dir) {
  const std::string parent = fs::path(final_dir).parent_path().string();
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(final_dir, ec))) {
    fs::rename(staging, final_dir);
    fsync_path(parent);
    return;
  }
  // Same tag again (a run resumed from an older checkpoint): swap in one step, so `<tag>` is
  // always a complete checkpoint; the old one ends up under the staging name and is deleted.
  if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, final_dir.c_str(), RENAME_EXCHANGE) == 0) {
    fsync_path(parent);
    fs::remove_all(staging);
    return;
  }
  const int err = errno;
  if (err != EINVAL && err != ENOSYS && err != ENOTSUP)
    throw ft::Error("cannot replace " + final_dir + " with " + staging + ": " + errno_text(err));
  delete_checkpoint(final_dir);
  fs::rename(staging, final_dir);
  fsync_path(parent);
}

void delete_checkpoint(const std::string& dir) {
  const fs::path path(dir);
  const fs::path hidden =
      path.parent_path() / ("." + path.filename().string() + ".deleting-" + std::to_string(::getpid()));
  fs::remove_all(hidden);
  fs::rename(path, hidden);
  fsync_path(path.parent_path().string());
  fs::remove_all(hidden);
}

}  // namespace fthost
