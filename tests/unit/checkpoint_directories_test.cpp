// core/checkpoint_directories directly: which directories of an output directory are complete
// checkpoints and in what order (what resume_from_checkpoint = true and keep_last_n act on), and
// what the start-up cleanup removes or restores after an interrupted save.
#include "train/checkpoint_directories.h"
#include "test_helpers.h"
#include "train/training_state.h"

#include <ft/durable_files.h>
#include <ft/errors.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using fttest::error_of;

// A complete checkpoint as far as the directory protocol looks: a manifest with steps_run.
void make_checkpoint(const std::string& dir, std::int64_t steps_run) {
  fthost::RecipeStateManifest m;
  m.progress.steps_run = steps_run;
  m.optimizer_files = {fthost::optimizer_file_name(0, 1)};
  fs::create_directories(fs::path(dir) / "recipe_state");
  std::ofstream(fthost::manifest_path_in(dir)) << fthost::manifest_json(m);
}

std::set<std::string> names_in(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

std::vector<std::string> tags_of(const std::vector<fthost::CheckpointEntry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.tag);
  return out;
}

TEST(CompleteCheckpoints, OrderedByStepWithTheEpochAfterTheStepOfTheSameStep) {
  fttest::TempDir out;
  make_checkpoint(out.file("step_10"), 10);
  make_checkpoint(out.file("epoch_1"), 12);
  make_checkpoint(out.file("step_4"), 4);
  make_checkpoint(out.file("epoch_0"), 6);
  make_checkpoint(out.file("step_6"), 6);  // saved as step_6 by an earlier run without the epoch rule
  const auto found = fthost::complete_checkpoints(out.str());
  // By global step, not by name ("step_10" sorts before "step_4" as text).
  EXPECT_EQ(tags_of(found), (std::vector<std::string>{"step_4", "step_6", "epoch_0", "step_10", "epoch_1"}));
  ASSERT_EQ(found.size(), 5u);
  EXPECT_EQ(found[2].dir, out.file("epoch_0"));
  EXPECT_EQ(found[2].steps_run, 6);
  EXPECT_EQ(found[4].steps_run, 12);
}

TEST(CompleteCheckpoints, OnlyVisibleTagDirectoriesWithAManifestCount) {
  fttest::TempDir out;
  make_checkpoint(out.file("step_2"), 2);
  fs::create_directories(out.file("epoch_0"));  // a model-only directory (an older run's epoch_0)
  std::ofstream(out.file("epoch_0/model.safetensors")) << "weights";
  make_checkpoint(out.file(".step_4.partial-99"), 4);  // staged, never installed
  make_checkpoint(out.file(".step_6.old-99"), 6);      // moved aside
  make_checkpoint(out.file("best"), 8);                // not a checkpoint tag
  make_checkpoint(out.file("step_x"), 9);
  std::ofstream(out.file("step_3")) << "a file, not a directory";
  EXPECT_EQ(tags_of(fthost::complete_checkpoints(out.str())), std::vector<std::string>{"step_2"});
}

TEST(CompleteCheckpoints, NoOutputDirectoryMeansNone) {
  fttest::TempDir out;
  EXPECT_TRUE(fthost::complete_checkpoints(out.file("not_yet")).empty());
}

TEST(CompleteCheckpoints, AnUnreadableManifestIsAnErrorNamingIt) {
  fttest::TempDir out;
  make_checkpoint(out.file("step_2"), 2);
  fs::create_directories(out.file("step_4/recipe_state"));
  std::ofstream(out.file("step_4/recipe_state/manifest.json")) << "{\"format\": ";
  const std::string message = error_of<ft::Error>([&] { fthost::complete_checkpoints(out.str()); });
  EXPECT_EQ(message.rfind(out.file("step_4/recipe_state/manifest.json") + ": not valid JSON", 0), 0u) << message;
}

TEST(RemoveInterruptedCheckpoints, RemovesExactlyTheHiddenLeftovers) {
  fttest::TempDir out;
  make_checkpoint(out.file("epoch_0"), 6);
  make_checkpoint(out.file("step_8"), 8);
  make_checkpoint(out.file(".epoch_1.partial-4242"), 12);  // a save cut short
  make_checkpoint(out.file(".step_4.deleting-4242"), 4);   // a keep_last_n deletion cut short
  make_checkpoint(out.file(".step_8.old-4242"), 8);        // replaced: step_8 is there
  // Not leftovers of the protocol: kept.
  fs::create_directories(out.file(".cache"));
  fs::create_directories(out.file(".epoch_0.partial-abc"));
  fs::create_directories(out.file(".best.partial-1"));
  fs::create_directories(out.file("logs"));
  std::ofstream(out.file("config.effective.toml")) << "seed = 0\n";

  const fthost::InterruptedCheckpoints cleaned = fthost::remove_interrupted_checkpoints(out.str());
  EXPECT_EQ(std::set<std::string>(cleaned.removed.begin(), cleaned.removed.end()),
            (std::set<std::string>{out.file(".epoch_1.partial-4242"), out.file(".step_4.deleting-4242"),
                                   out.file(".step_8.old-4242")}));
  EXPECT_TRUE(cleaned.restored.empty());
  EXPECT_EQ(names_in(out.str()), (std::set<std::string>{"epoch_0", "step_8", ".cache", ".epoch_0.partial-abc",
                                                        ".best.partial-1", "logs", "config.effective.toml"}));
  EXPECT_EQ(tags_of(fthost::complete_checkpoints(out.str())), (std::vector<std::string>{"epoch_0", "step_8"}));
}

// A crash after the old checkpoint was moved aside and before its replacement was renamed in:
// the old one is complete, and is what the run resumes from.
TEST(RemoveInterruptedCheckpoints, RestoresACheckpointMovedAsideWhoseReplacementNeverArrived) {
  fttest::TempDir out;
  make_checkpoint(out.file(".epoch_1.old-31"), 12);
  make_checkpoint(out.file(".epoch_1.old-30"), 12);  // an even older interrupted replacement
  make_checkpoint(out.file(".epoch_1.partial-31"), 12);
  const fthost::InterruptedCheckpoints cleaned = fthost::remove_interrupted_checkpoints(out.str());
  EXPECT_EQ(cleaned.restored, std::vector<std::string>{out.file(".epoch_1.old-30") + " -> " + out.file("epoch_1")});
  EXPECT_EQ(std::set<std::string>(cleaned.removed.begin(), cleaned.removed.end()),
            (std::set<std::string>{out.file(".epoch_1.old-31"), out.file(".epoch_1.partial-31")}));
  EXPECT_EQ(names_in(out.str()), std::set<std::string>{"epoch_1"});
  EXPECT_EQ(tags_of(fthost::complete_checkpoints(out.str())), std::vector<std::string>{"epoch_1"});
}

TEST(RemoveInterruptedCheckpoints, NothingToDoInACleanOrMissingDirectory) {
  fttest::TempDir out;
  make_checkpoint(out.file("epoch_0"), 6);
  const auto cleaned = fthost::remove_interrupted_checkpoints(out.str());
  EXPECT_TRUE(cleaned.removed.empty());
  EXPECT_TRUE(cleaned.restored.empty());
  EXPECT_EQ(names_in(out.str()), std::set<std::string>{"epoch_0"});
  EXPECT_TRUE(fthost::remove_interrupted_checkpoints(out.file("absent")).removed.empty());
}

// The host stages with rank 0's pid, a checkpointer plugin with its own: both kinds of staging
// directory a crash leaves, and the other hidden names, are what the next start cleans up.
TEST(CheckpointDirectories, EveryHiddenNameTheSaversMakeIsCleanedUpAtTheNextStart) {
  fttest::TempDir out;
  make_checkpoint(out.file("step_40"), 40);
  const std::vector<std::string> left = {
      ft::staging_directory(out.file("step_48"), 1234),  // the host's save of step_48
      ft::staging_directory(out.file("epoch_1"), 99),    // a plugin's own save of epoch_1
      ft::hidden_sibling(out.file("step_40"), ft::HiddenRole::Replaced, 1234),
      ft::hidden_sibling(out.file("step_32"), ft::HiddenRole::Deleting, 1234)};
  for (const std::string& dir : left) make_checkpoint(dir, 0);
  const fthost::InterruptedCheckpoints cleaned = fthost::remove_interrupted_checkpoints(out.str());
  EXPECT_EQ(std::set<std::string>(cleaned.removed.begin(), cleaned.removed.end()),
            std::set<std::string>(left.begin(), left.end()));
  EXPECT_EQ(names_in(out.str()), std::set<std::string>{"step_40"});
}

}  // namespace
