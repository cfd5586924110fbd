// The directory protocol of training checkpoints in an output directory. A complete checkpoint
// is a visible `epoch_N/` or `step_N/` holding `recipe_state/manifest.json`; it appears in one
// rename of a fully written and synced hidden `.<tag>.partial-<id>/`, and disappears by first
// being renamed to a hidden `.<tag>.deleting-<id>/`. Hidden directories are never resumed from;
// whatever a crash leaves of them is removed at the next start.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fthost {

struct CheckpointEntry {
  std::string tag;  // "epoch_0", "step_40"
  std::string dir;
  std::int64_t steps_run = 0;
};

// Complete checkpoints in `output_dir`, oldest first (by steps_run; an epoch checkpoint after a
// step checkpoint of the same step). Reads each manifest's steps_run; a manifest that cannot be
// read is an error naming it.
std::vector<CheckpointEntry> complete_checkpoints(const std::string& output_dir);

// Removes what interrupted saves and deletions left (`.<tag>.partial-*`, `.<tag>.deleting-*`,
// `.<tag>.old-*`); returns the paths removed.
std::vector<std::string> remove_interrupted_checkpoints(const std::string& output_dir);

std::string staging_dir_for(const std::string& output_dir, const std::string& tag, std::int64_t run_id);

// fsync of a file or a directory; throws ft::Error naming it.
void fsync_path(const std::string& path);
// `path` replaced atomically by `text` (temporary file, fsync, rename, directory fsync).
void write_text_durably(const std::string& path, const std::string& text);

// Makes the synced `staging` directory the checkpoint `final_dir`, replacing one of the same tag
// in a single exchange where the file system allows it.
void install_checkpoint(const std::string& staging, const std::string& final_dir);
// Hides, then deletes, a complete checkpoint.
void delete_checkpoint(const std::string& dir);

}  // namespace fthost
