// The durable-directory protocol of ft/durable_files.h: atomic file writes and copies, installing
// a staged directory (by exchange, and by the moving-aside fallback for file systems without
// one), and deleting by hiding first. The renames are injected to fail single steps, and to
// "crash" between any two: a copy of the directory taken there, cleaned up as the next run's
// start does (remove_interrupted_checkpoints), must still hold a complete checkpoint.
#include "test_helpers.h"
#include "train/checkpoint_directories.h"

#include <ft/durable_files.h>
#include <ft/errors.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using fttest::error_of;
using fttest::read_file;

const ft::DirectoryRenames& system_renames() { return ft::system_directory_renames(); }

std::set<std::string> names_in(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// A checkpoint-like directory whose `weights` file says which one it is.
void make_checkpoint(const std::string& dir, const std::string& which) {
  fs::create_directories(fs::path(dir) / "recipe_state");
  std::ofstream(fs::path(dir) / "weights") << which;
  std::ofstream(fs::path(dir) / "recipe_state" / "manifest.json") << "{}";
}

std::string which_checkpoint(const std::string& dir) { return read_file((fs::path(dir) / "weights").string()); }

TEST(DurableFiles, TextFileIsReplacedWholeAndNoTemporaryRemains) {
  fttest::TempDir dir;
  const std::string path = dir.file("config.json");
  ft::write_text_file_atomically(path, "first");
  ft::write_text_file_atomically(path, "second, longer");
  EXPECT_EQ(read_file(path), "second, longer");
  EXPECT_EQ(names_in(dir.str()), std::set<std::string>{"config.json"});
}

TEST(DurableFiles, AFailedWriteKeepsTheOldContentsAndRemovesItsTemporary) {
  fttest::TempDir dir;
  const std::string path = dir.file("model.safetensors");
  ft::write_text_file_atomically(path, "old");
  const std::string message = error_of<std::runtime_error>([&] {
    ft::write_file_atomically(path, [&](int fd) {
      ft::write_all(fd, "half", 4, path);
      throw std::runtime_error("disk full halfway");
    });
  });
  EXPECT_EQ(message, "disk full halfway");
  EXPECT_EQ(read_file(path), "old");
  EXPECT_EQ(names_in(dir.str()), std::set<std::string>{"model.safetensors"});
}

TEST(DurableFiles, WriteAllWritesLargeBuffersCompletely) {
  fttest::TempDir dir;
  const std::string path = dir.file("big");
  std::string data(3 << 20, '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + 3);
  ft::write_file_atomically(path, [&](int fd) { ft::write_all(fd, data.data(), data.size(), path); });
  EXPECT_EQ(read_file(path), data);
}

TEST(DurableFiles, CopyFollowsSymlinksAndErrorsNameTheFile) {
  fttest::TempDir dir;
  ft::write_text_file_atomically(dir.file("blob"), "tokenizer bytes");
  fs::create_symlink(dir.file("blob"), dir.file("tokenizer.json"));
  fs::create_directories(dir.file("out"));
  ft::copy_file_atomically(dir.file("tokenizer.json"), dir.file("out/tokenizer.json"));
  EXPECT_FALSE(fs::is_symlink(dir.file("out/tokenizer.json")));
  EXPECT_EQ(read_file(dir.file("out/tokenizer.json")), "tokenizer bytes");

  const std::string missing = error_of<ft::Error>([&] { ft::copy_file_atomically(dir.file("nope"), dir.file("x")); });
  EXPECT_EQ(missing, dir.file("nope") + ": cannot open: No such file or directory");
  const std::string no_dir =
      error_of<ft::Error>([&] { ft::write_text_file_atomically(dir.file("absent/config.json"), "{}"); });
  EXPECT_NE(no_dir.find(dir.file("absent/config.json.tmp-")), std::string::npos) << no_dir;
  EXPECT_NE(no_dir.find("cannot create"), std::string::npos) << no_dir;
  EXPECT_NE(error_of<ft::Error>([&] { ft::fsync_path(dir.file("absent")); }).find(dir.file("absent")),
            std::string::npos);
}

TEST(DurableFiles, HiddenSiblingNamesTheRoleAndThisProcess) {
  const std::string pid = std::to_string(::getpid());
  EXPECT_EQ(ft::hidden_sibling("/out/epoch_3", ft::HiddenRole::Replaced), "/out/.epoch_3.old-" + pid);
  EXPECT_EQ(ft::hidden_sibling("/out/epoch_3/", ft::HiddenRole::Deleting), "/out/.epoch_3.deleting-" + pid);
}

// The staging name docs/checkpointing.md gives: `<dir>/.<tag>.partial-<id>/`.
TEST(DurableFiles, StagingDirectoryIsTheHiddenPartialNameWithTheGivenId) {
  EXPECT_EQ(ft::staging_directory("/runs/out/step_40", 1234), "/runs/out/.step_40.partial-1234");
  EXPECT_EQ(ft::staging_directory("/runs/out/epoch_0/", 7), "/runs/out/.epoch_0.partial-7");
  EXPECT_EQ(ft::staging_directory("relative/epoch_0", 7), "relative/.epoch_0.partial-7");
}

TEST(DurableFiles, ParseHiddenSiblingRecognisesEveryNameTheProtocolMakes) {
  for (ft::HiddenRole role : {ft::HiddenRole::Staging, ft::HiddenRole::Replaced, ft::HiddenRole::Deleting}) {
    for (const std::string name : {"epoch_2", "model.v1", "x"}) {
      const std::string made = fs::path(ft::hidden_sibling("/out/" + name, role, 4242)).filename().string();
      const auto parsed = ft::parse_hidden_sibling(made);
      ASSERT_TRUE(parsed.has_value()) << made;
      EXPECT_EQ(parsed->name, name) << made;
      EXPECT_EQ(parsed->role, role) << made;
      EXPECT_EQ(parsed->id, "4242") << made;
    }
  }
  const auto staged = ft::parse_hidden_sibling(".step_8.partial-31");
  ASSERT_TRUE(staged.has_value());
  EXPECT_EQ(staged->name, "step_8");
  EXPECT_EQ(staged->role, ft::HiddenRole::Staging);
  EXPECT_EQ(staged->id, "31");
}

TEST(DurableFiles, ParseHiddenSiblingRejectsOtherNames) {
  for (const std::string other :
       {"epoch_0", "epoch_0.partial-1", ".cache", ".epoch_0.partial-abc", ".epoch_0.partial-", ".epoch_0.partial-1x",
        ".epoch_0.staging-1", ".epoch_0.old", ".partial-1", "..partial-1", ".epoch_0-1", ".epoch_0.tmp-1", ""})
    EXPECT_FALSE(ft::parse_hidden_sibling(other).has_value()) << '"' << other << '"';
}

TEST(InstallDirectory, IntoAFreeNameIsOneRename) {
  fttest::TempDir out;
  make_checkpoint(out.file(".epoch_0.partial-7"), "new");
  ft::install_directory(out.file(".epoch_0.partial-7"), out.file("epoch_0"));
  EXPECT_EQ(which_checkpoint(out.file("epoch_0")), "new");
  EXPECT_EQ(names_in(out.str()), std::set<std::string>{"epoch_0"});
}

TEST(InstallDirectory, ReplacesAnExistingDirectoryAndRemovesTheOld) {
  fttest::TempDir out;
  make_checkpoint(out.file("epoch_1"), "old");
  make_checkpoint(out.file(".epoch_1.partial-7"), "new");
  int exchanges = 0, renames = 0, exchange_errno = 0;
  ft::DirectoryRenames counted{[&](const std::string& from, const std::string& to) {
                                 ++renames;
                                 return system_renames().rename(from, to);
                               },
                               [&](const std::string& a, const std::string& b) {
                                 ++exchanges;
                                 const int rc = system_renames().exchange(a, b);
                                 exchange_errno = rc == 0 ? 0 : errno;
                                 return rc;
                               }};
  ft::install_directory(out.file(".epoch_1.partial-7"), out.file("epoch_1"), counted);
  EXPECT_EQ(which_checkpoint(out.file("epoch_1")), "new");
  EXPECT_EQ(names_in(out.str()), std::set<std::string>{"epoch_1"});
  EXPECT_EQ(exchanges, 1);
  // ext4, xfs, btrfs and tmpfs exchange; elsewhere the fallback takes two renames.
  EXPECT_EQ(renames, exchange_errno == 0 ? 0 : 2) << "exchange errno " << exchange_errno;
}

TEST(InstallDirectory, WithoutExchangeMovesTheOldAsideThenRemovesIt) {
  fttest::TempDir out;
  make_checkpoint(out.file("epoch_1"), "old");
  make_checkpoint(out.file(".epoch_1.partial-7"), "new");
  const std::string aside = ft::hidden_sibling(out.file("epoch_1"), ft::HiddenRole::Replaced);
  std::vector<std::pair<std::string, std::string>> calls;
  ft::DirectoryRenames no_exchange{[&](const std::string& from, const std::string& to) {
                                     calls.emplace_back(from, to);
                                     return system_renames().rename(from, to);
                                   },
                                   [](const std::string&, const std::string&) {
                                     errno = EINVAL;
                                     return -1;
                                   }};
  ft::install_directory(out.file(".epoch_1.partial-7"), out.file("epoch_1"), no_exchange);
  EXPECT_EQ(which_checkpoint(out.file("epoch_1")), "new");
  EXPECT_EQ(names_in(out.str()), std::set<std::string>{"epoch_1"});
  const std::vector<std::pair<std::string, std::string>> expected{
      {out.file("epoch_1"), aside}, {out.file(".epoch_1.partial-7"), out.file("epoch_1")}};
  EXPECT_EQ(calls, expected);
}

TEST(InstallDirectory, AFailedFallbackPutsTheOldBackAndLeavesTheStagedForTheCaller) {
  fttest::TempDir out;
  make_checkpoint(out.file("epoch_1"), "old");
  make_checkpoint(out.file(".epoch_1.partial-7"), "new");
  ft::DirectoryRenames failing{[&](const std::string& from, const std::string& to) {
                                 if (from == out.file(".epoch_1.partial-7")) {
                                   errno = EIO;
                                   return -1;
                                 }
                                 return system_renames().rename(from, to);
                               },
                               [](const std::string&, const std::string&) {
                                 errno = ENOTSUP;
                                 return -1;
                               }};
  const std::string message =
      error_of<ft::Error>([&] { ft::install_directory(out.file(".epoch_1.partial-7"), out.file("epoch_1"), failing); });
  EXPECT_EQ(message,
            "cannot rename " + out.file(".epoch_1.partial-7") + " to " + out.file("epoch_1") + ": Input/output error");
  EXPECT_EQ(which_checkpoint(out.file("epoch_1")), "old");
  EXPECT_EQ(which_checkpoint(out.file(".epoch_1.partial-7")), "new");
  EXPECT_EQ(names_in(out.str()), (std::set<std::string>{"epoch_1", ".epoch_1.partial-7"}));
}

TEST(InstallDirectory, AnExchangeFailingForAnotherReasonChangesNothing) {
  fttest::TempDir out;
  make_checkpoint(out.file("epoch_1"), "old");
  make_checkpoint(out.file(".epoch_1.partial-7"), "new");
  int renames = 0;
  ft::DirectoryRenames denied{[&](const std::string& from, const std::string& to) {
                                ++renames;
                                return system_renames().rename(from, to);
                              },
                              [](const std::string&, const std::string&) {
                                errno = EACCES;
                                return -1;
                              }};
  const std::string message =
      error_of<ft::Error>([&] { ft::install_directory(out.file(".epoch_1.partial-7"), out.file("epoch_1"), denied); });
  EXPECT_EQ(message, "cannot replace " + out.file("epoch_1") + " with " + out.file(".epoch_1.partial-7") +
                         ": Permission denied");
  EXPECT_EQ(renames, 0);
  EXPECT_EQ(which_checkpoint(out.file("epoch_1")), "old");
  EXPECT_EQ(which_checkpoint(out.file(".epoch_1.partial-7")), "new");
}

// A crash between any two steps of an install, followed by the next start's cleanup, leaves
// `epoch_1` a complete checkpoint: the old one until the new one is in, then the new one.
class InstallCrashPoints : public ::testing::TestWithParam<bool> {
 protected:
  // The checkpoint a restarted run finds after a crash at this moment.
  std::string after_crash_now(const std::string& out) {
    const std::string copy = crash_copies_.file(std::to_string(observed_.size()));
    fs::copy(out, copy, fs::copy_options::recursive);
    fthost::remove_interrupted_checkpoints(copy);
    for (const std::string& name : names_in(copy)) EXPECT_EQ(name[0] == '.', false) << "left after cleanup: " << name;
    const std::string found = fs::exists(fs::path(copy) / "epoch_1") ? which_checkpoint(copy + "/epoch_1") : "none";
    observed_.push_back(found);
    return found;
  }

  fttest::TempDir crash_copies_;
  std::vector<std::string> observed_;
};

TEST_P(InstallCrashPoints, AnExistingCheckpointIsNeverAbsent) {
  const bool exchange_supported = GetParam();
  fttest::TempDir out;
  make_checkpoint(out.file("epoch_1"), "old");
  make_checkpoint(out.file(".epoch_1.partial-7"), "new");
  ft::DirectoryRenames observed{[&](const std::string& from, const std::string& to) {
                                  after_crash_now(out.str());
                                  const int rc = system_renames().rename(from, to);
                                  after_crash_now(out.str());
                                  return rc;
                                },
                                [&](const std::string& a, const std::string& b) {
                                  if (!exchange_supported) {
                                    errno = EINVAL;
                                    return -1;
                                  }
                                  after_crash_now(out.str());
                                  const int rc = system_renames().exchange(a, b);
                                  after_crash_now(out.str());
                                  return rc;
                                }};
  ft::install_directory(out.file(".epoch_1.partial-7"), out.file("epoch_1"), observed);
  after_crash_now(out.str());

  ASSERT_GE(observed_.size(), 3u);
  EXPECT_EQ(observed_.front(), "old");
  EXPECT_EQ(observed_.back(), "new");
  for (std::size_t i = 0; i < observed_.size(); ++i) {
    EXPECT_NE(observed_[i], "none") << "no checkpoint after a crash at point " << i;
    if (i > 0 && observed_[i - 1] == "new") {
      EXPECT_EQ(observed_[i], "new") << "went back to the old at point " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ExchangeAndFallback, InstallCrashPoints, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& exchange) {
                           return exchange.param ? "Exchange" : "MovingAside";
                         });

TEST(DeleteDirectory, RemovesTheDirectoryAndAnEarlierHiddenLeftover) {
  fttest::TempDir out;
  make_checkpoint(out.file("step_4"), "doomed");
  make_checkpoint(ft::hidden_sibling(out.file("step_4"), ft::HiddenRole::Deleting), "left by an earlier failure");
  make_checkpoint(out.file("step_8"), "kept");
  ft::delete_directory(out.file("step_4"));
  EXPECT_EQ(names_in(out.str()), std::set<std::string>{"step_8"});
  EXPECT_EQ(which_checkpoint(out.file("step_8")), "kept");
}

TEST(DeleteDirectory, AMissingDirectoryIsAnErrorNamingIt) {
  fttest::TempDir out;
  const std::string message = error_of<ft::Error>([&] { ft::delete_directory(out.file("step_4")); });
  EXPECT_EQ(message.rfind("cannot delete " + out.file("step_4") + ": renaming it to ", 0), 0u) << message;
  EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
}

}  // namespace
