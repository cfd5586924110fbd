#include "train/checkpoint_directories.h"

#include <ft/durable_files.h>
#include <ft/errors.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string_view>
#include <tuple>

namespace fthost {

namespace {

namespace fs = std::filesystem;

bool all_digits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// Names are matched by hand rather than with std::regex: a PyTorch wheel exports std::regex
// instantiations built by another compiler, and a process linking one crashed in them.
bool is_checkpoint_tag(std::string_view name) {
  for (std::string_view prefix : {"epoch_", "step_"})
    if (name.substr(0, prefix.size()) == prefix) return all_digits(name.substr(prefix.size()));
  return false;
}

// A leftover of the durable-directory protocol belonging to a checkpoint; other hidden names
// (`.cache`, another tool's `.best.partial-1`) are not ours to remove.
std::optional<ft::HiddenSiblingName> checkpoint_leftover(const std::string& file_name) {
  std::optional<ft::HiddenSiblingName> hidden = ft::parse_hidden_sibling(file_name);
  if (!hidden || !is_checkpoint_tag(hidden->name)) return std::nullopt;
  return hidden;
}

void remove_or_throw(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec)
    throw ft::Error(path.string() + ": cannot remove this leftover of an interrupted checkpoint save: " + ec.message());
}

}  // namespace

CheckpointScan scan_checkpoints(const std::string& output_dir) {
  CheckpointScan scan;
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec)) return scan;
  for (const fs::directory_entry& entry : fs::directory_iterator(output_dir)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || !is_checkpoint_tag(name)) continue;
    const std::string manifest = manifest_path_in(entry.path().string());
    if (!fs::exists(manifest)) continue;  // a plain model directory (an older run's epoch_N)
    try {
      RecipeStateManifest m = read_manifest(manifest);
      const std::int64_t steps_run = m.progress.steps_run;
      scan.readable.push_back({name, entry.path().string(), steps_run, std::move(m)});
    } catch (const ft::Error& e) {
      scan.unreadable.push_back({entry.path().string(), e.what()});
    }
  }
  std::sort(scan.readable.begin(), scan.readable.end(), [](const CheckpointEntry& a, const CheckpointEntry& b) {
    const bool a_epoch = a.tag.rfind("epoch_", 0) == 0, b_epoch = b.tag.rfind("epoch_", 0) == 0;
    return std::tie(a.steps_run, a_epoch, a.tag) < std::tie(b.steps_run, b_epoch, b.tag);
  });
  return scan;
}

std::vector<CheckpointEntry> complete_checkpoints(const std::string& output_dir) {
  CheckpointScan scan = scan_checkpoints(output_dir);
  if (!scan.unreadable.empty()) throw ft::Error(scan.unreadable.front().why);
  return std::move(scan.readable);
}

InterruptedCheckpoints remove_interrupted_checkpoints(const std::string& output_dir) {
  InterruptedCheckpoints result;
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec)) return result;
  struct Leftover {
    fs::path path;
    ft::HiddenSiblingName hidden;
  };
  std::vector<Leftover> leftovers;
  for (const fs::directory_entry& entry : fs::directory_iterator(output_dir))
    if (auto hidden = checkpoint_leftover(entry.path().filename().string()))
      leftovers.push_back({entry.path(), std::move(*hidden)});
  // Sorted by name, so which of several moved-aside copies is restored does not depend on the
  // directory's order.
  std::sort(leftovers.begin(), leftovers.end(), [](const Leftover& a, const Leftover& b) { return a.path < b.path; });
  for (const Leftover& l : leftovers) {
    const fs::path tag_dir = fs::path(output_dir) / l.hidden.name;
    if (l.hidden.role == ft::HiddenRole::Replaced && !fs::exists(fs::symlink_status(tag_dir, ec))) {
      fs::rename(l.path, tag_dir, ec);
      if (ec)
        throw ft::Error("cannot restore the checkpoint " + l.path.string() +
                        " (moved aside by an interrupted save) to " + tag_dir.string() + ": " + ec.message());
      result.restored.push_back(l.path.string() + " -> " + tag_dir.string());
      continue;
    }
    remove_or_throw(l.path);
    result.removed.push_back(l.path.string());
  }
  if (!leftovers.empty()) ft::fsync_path(output_dir);
  return result;
}

}  // namespace fthost
