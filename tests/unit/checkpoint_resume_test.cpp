// Training checkpoints through the fthost binary: a run killed with SIGKILL anywhere (mid-step,
// mid-save) and resumed logs exactly the losses of the run never interrupted; damaged
// checkpoints fail with the damaged file's name; sharded (FSDP) state resumes exactly; a
// background save writes the same bytes as a synchronous one; keep_last_n bounds the disk.
#include "resume_reference.h"
#include "running_fthost.h"
#include "test_helpers.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

namespace {

using namespace fttest::resume;
using fttest::RunningFthost;

class CheckpointResume : public ResumeReference {};

// SIGKILL once the run has logged a random number of steps, then resume: the same losses, lr
// and gradient norms at every step, and the same final weights, bit for bit.
TEST_F(CheckpointResume, KilledAtARandomStepResumesBitwise) {
  for (unsigned seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    const std::size_t kill_after = std::uniform_int_distribution<std::size_t>(2, kTotalSteps - 2)(rng);
    const std::string out = fttest::temp_dir();
    const std::string config = config_in(out);
    const std::string log = out + "/run.log";
    const std::string args = "--config " + config + kShape + " save_every_n_steps=2";
    {
      RunningFthost run(args, log);
      while (run.running() && lines_in(metrics_of(out)) < kill_after)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      run.kill9();
    }
    const std::size_t logged_before = lines_in(metrics_of(out));
    ASSERT_LT(logged_before, static_cast<std::size_t>(kTotalSteps)) << fttest::read_file(log);
    auto resumed =
        fttest::run_fthost("--config " + config + kShape + " save_every_n_steps=2 resume_from_checkpoint=true");
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("resumed from"), std::string::npos) << resumed.output;
    expect_same_trajectory(*reference_, read_jsonl(metrics_of(out)), resumed.output);
    EXPECT_TRUE(final_weights(out) == final_weights(*reference_dir_)) << "final weights differ";
  }
}

// Killed at random moments over and over (a checkpoint every step, so many kills land inside
// a save), each time resumed: the run still completes with the uninterrupted trajectory.
TEST_F(CheckpointResume, RepeatedKillsAtRandomTimesNeverLoseTheRun) {
  const std::string out = fttest::temp_dir();
  const std::string config = config_in(out);
  const std::string log = out + "/run.log";
  const std::string args =
      "--config " + config + kShape + " save_every_n_steps=1 keep_last_n=2 resume_from_checkpoint=true";
  std::mt19937 rng(7);
  int exit_code = -1;
  for (int attempt = 0; attempt < 40 && exit_code != 0; ++attempt) {
    RunningFthost run(args, log);
    // Let it get a little further each time, so the run finishes even on a slow machine.
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(std::uniform_int_distribution<int>(300, 1200)(rng) + 100 * attempt);
    while (run.running() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (run.running()) {
      run.kill9();
      continue;
    }
    exit_code = run.wait();
    ASSERT_EQ(exit_code, 0) << fttest::read_file(log);
  }
  ASSERT_EQ(exit_code, 0) << fttest::read_file(log);
  expect_same_trajectory(*reference_, read_jsonl(metrics_of(out)), fttest::read_file(log));
  EXPECT_TRUE(final_weights(out) == final_weights(*reference_dir_)) << "final weights differ";
  EXPECT_EQ(hidden_entries_of(out), std::set<std::string>{}) << "a partial checkpoint was left behind";
}

// What a kill during a save leaves, made by hand: a half-written staging directory of a newer
// step and a half-deleted old one. Resume ignores both, removes them, and continues from the
// newest complete checkpoint.
TEST_F(CheckpointResume, InterruptedSavesAreIgnoredAndRemoved) {
  const std::string out = fttest::temp_dir();
  const std::string config = config_in(out);
  auto first = fttest::run_fthost("--config " + config + kShape + " save_every_n_steps=2");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  for (const char* newer : {"epoch_0", "step_8", "step_10", "epoch_1"}) fs::remove_all(out + "/" + newer);
  // A newer save killed before its manifest: everything but recipe_state/manifest.json.
  fs::copy(out + "/step_4", out + "/.step_5.partial-4242", fs::copy_options::recursive);
  fs::remove(out + "/.step_5.partial-4242/recipe_state/manifest.json");
  fs::copy(out + "/step_2", out + "/.step_2.deleting-4242", fs::copy_options::recursive);
  // A newer visible directory without recipe state is a plain model directory, never resumed.
  fs::create_directories(out + "/step_9");
  fs::copy(out + "/step_4/model.safetensors", out + "/step_9/model.safetensors");

  auto resumed =
      fttest::run_fthost("--config " + config + kShape + " save_every_n_steps=2 resume_from_checkpoint=true");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from " + out + "/step_4: step 4"), std::string::npos) << resumed.output;
  EXPECT_NE(resumed.output.find("removed " + out + "/.step_5.partial-4242, left by an interrupted save"),
            std::string::npos)
      << resumed.output;
  EXPECT_EQ(hidden_entries_of(out), std::set<std::string>{});
  expect_same_trajectory(*reference_, read_jsonl(metrics_of(out)), resumed.output);
}

TEST_F(CheckpointResume, KeepLastNDeletesTheOldestCompleteCheckpoints) {
  const std::string out = fttest::temp_dir();
  auto r = fttest::run_fthost("--config " + config_in(out) + kShape + " save_every_n_steps=2 keep_last_n=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::set<std::string> checkpoints;
  for (const auto& name : entries_of(out))
    if (name.rfind("step_", 0) == 0 || name.rfind("epoch_", 0) == 0) checkpoints.insert(name);
  EXPECT_EQ(checkpoints, (std::set<std::string>{"step_10", "epoch_1"})) << r.output;
  EXPECT_NE(r.output.find("deleted " + out + "/step_2 (keep_last_n = 2)"), std::string::npos) << r.output;
}

// The recipe state as documented: the seed's keys, the data position, one optimizer file.
TEST_F(CheckpointResume, ManifestHoldsTheDocumentedKeys) {
  const json m = fttest::golden::read_json(*reference_dir_ + "/epoch_0/recipe_state/manifest.json");
  EXPECT_EQ(m.at("format"), "fthost.recipe_state");
  EXPECT_EQ(m.at("seed"), 0);
  EXPECT_EQ(m.at("epochs_run"), 1);
  EXPECT_EQ(m.at("total_epochs"), 2);
  EXPECT_EQ(m.at("max_steps_per_epoch"), 6);
  EXPECT_EQ(m.at("steps_run"), 6);
  EXPECT_EQ(m.at("data").at("epoch"), 1);
  EXPECT_EQ(m.at("data").at("micro_batches_in_epoch"), 0);
  EXPECT_EQ(m.at("lr_scheduler").at("last_epoch"), 6);
  EXPECT_EQ(m.at("world_size"), 1);
  EXPECT_EQ(m.at("optimizer").at("files"), json::array({"recipe_state/optimizer-rank-00000-of-00001.safetensors"}));
  EXPECT_TRUE(fs::exists(*reference_dir_ + "/epoch_0/model.safetensors"));
  EXPECT_TRUE(fs::exists(*reference_dir_ + "/epoch_0/config.json"));
  // The safetensors header, read independently: torch.optim's names, AdamW's fields.
  const std::string file =
      fttest::read_file(*reference_dir_ + "/epoch_0/recipe_state/optimizer-rank-00000-of-00001.safetensors");
  std::uint64_t header_size = 0;
  std::memcpy(&header_size, file.data(), 8);
  const json header = json::parse(file.substr(8, header_size));
  EXPECT_EQ(header.at("state.0.step").at("dtype"), "I64");
  EXPECT_EQ(header.at("state.0.exp_avg").at("dtype"), "F32");
  EXPECT_TRUE(header.contains("state.0.exp_avg_sq"));
}

// A copy of the reference's epoch_0 damaged by `damage`, resumed: a clean failure (exit code
// 2, fthost's for errors; no crash) whose message names `expected`.
class DamagedCheckpoint : public CheckpointResume {
 protected:
  void expect_refused(const std::function<void(const std::string& ckpt)>& damage, const std::string& expected_file,
                      const std::string& expected_text, const std::string& extra_args = "") {
    const std::string out = fttest::temp_dir();
    const std::string ckpt = out + "/epoch_0";
    fs::copy(*reference_dir_ + "/epoch_0", ckpt, fs::copy_options::recursive);
    damage(ckpt);
    auto r = fttest::run_fthost("--config " + config_in(out) + kShape + " resume_from_checkpoint=true " + extra_args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(ckpt + "/" + expected_file), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(expected_text), std::string::npos) << r.output;
  }
  static void truncate(const std::string& path, std::uintmax_t size) { fs::resize_file(path, size); }
  static void overwrite(const std::string& path, std::size_t offset, const std::string& bytes) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
};

TEST_F(DamagedCheckpoint, TruncatedOptimizerState) {
  expect_refused(
      [](const std::string& c) { truncate(c + "/recipe_state/optimizer-rank-00000-of-00001.safetensors", 100); },
      "recipe_state/optimizer-rank-00000-of-00001.safetensors", "truncated");
}

TEST_F(DamagedCheckpoint, CorruptModelWeights) {
  // Same size, so only reading the file can tell.
  expect_refused([](const std::string& c) { overwrite(c + "/model.safetensors", 8, "{garbage"); }, "model.safetensors",
                 "model.safetensors");
}

TEST_F(DamagedCheckpoint, CorruptOptimizerTensors) {
  expect_refused(
      [](const std::string& c) {
        overwrite(c + "/recipe_state/optimizer-rank-00000-of-00001.safetensors", 0, "\xff\xff\xff\xff");
      },
      "recipe_state/optimizer-rank-00000-of-00001.safetensors", "optimizer-rank-00000-of-00001.safetensors");
}

TEST_F(DamagedCheckpoint, TruncatedManifest) {
  expect_refused([](const std::string& c) { truncate(c + "/recipe_state/manifest.json", 40); },
                 "recipe_state/manifest.json", "not valid JSON");
}

TEST_F(DamagedCheckpoint, ManifestMissingAKey) {
  expect_refused(
      [](const std::string& c) {
        json m = fttest::golden::read_json(c + "/recipe_state/manifest.json");
        m.erase("steps_run");
        std::ofstream(c + "/recipe_state/manifest.json") << m.dump(2);
      },
      "recipe_state/manifest.json", "missing key \"steps_run\"");
}

TEST_F(DamagedCheckpoint, AnotherModel) {
  expect_refused(
      [](const std::string& c) {
        json m = fttest::golden::read_json(c + "/recipe_state/manifest.json");
        m["model"]["parameters"][0]["shape"] = json::array({7, 7});
        std::ofstream(c + "/recipe_state/manifest.json") << m.dump(2);
      },
      "recipe_state/manifest.json", "belongs to another model");
}

TEST_F(DamagedCheckpoint, AnotherWorldSize) {
  expect_refused([](const std::string&) {}, "recipe_state/manifest.json", "world size 1",
                 "--nproc-per-node 2 parallelism._component_=fthost.parallelism.fsdp");
}

// Conflicting config values: the seed's rules (checkpoint's seed and max_steps_per_epoch with
// a warning), and an error where the saved data position would mean other samples.
TEST_F(CheckpointResume, ConflictingConfigValues) {
  const std::string out = fttest::temp_dir();
  fs::copy(*reference_dir_ + "/epoch_0", out + "/epoch_0", fs::copy_options::recursive);
  auto warned = fttest::run_fthost("--config " + config_in(out) +
                                   " epochs=2 max_steps_per_epoch=5 seed=3 resume_from_checkpoint=true");
  ASSERT_EQ(warned.exit_code, 0) << warned.output;
  EXPECT_NE(warned.output.find("config seed 3 differs from the checkpoint's 0; using the checkpoint's"),
            std::string::npos)
      << warned.output;
  EXPECT_NE(warned.output.find("config max_steps_per_epoch 5 differs from the checkpoint's 6"), std::string::npos);
  std::vector<json> rows = read_jsonl(metrics_of(out));
  ASSERT_EQ(rows.size(), 6u);
  std::map<int, json> second_epoch;
  for (const auto& [step, row] : *reference_)
    if (step > 6) second_epoch[step] = row;
  expect_same_trajectory(second_epoch, rows, warned.output);

  auto refused = fttest::run_fthost("--config " + config_in(out) + kShape +
                                    " batch_size=1 resume_from_checkpoint=" + out + "/epoch_0");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find(out + "/epoch_0/recipe_state/manifest.json: saved with batch_size 2"),
            std::string::npos)
      << refused.output;

  auto bad_path = fttest::run_fthost("--config " + config_in(out) + " resume_from_checkpoint=" + out + "/nowhere");
  EXPECT_EQ(bad_path.exit_code, 2);
  EXPECT_NE(bad_path.output.find("resume_from_checkpoint: no such directory: " + out + "/nowhere"), std::string::npos)
      << bad_path.output;
  auto bad_keep = fttest::run_fthost("--config " + config_in(out) + " keep_last_n=-1");
  EXPECT_NE(bad_keep.output.find("keep_last_n: expected an integer >= 0"), std::string::npos) << bad_keep.output;
}

// The background save writes exactly what the synchronous one writes.
TEST_F(CheckpointResume, AsyncSaveWritesTheSameBytes) {
  const std::string sync_out = fttest::temp_dir(), async_out = fttest::temp_dir();
  auto sync_run = fttest::run_fthost("--config " + config_in(sync_out) + kShape + " save_every_n_steps=4");
  ASSERT_EQ(sync_run.exit_code, 0) << sync_run.output;
  auto async_run = fttest::run_fthost("--config " + config_in(async_out) + kShape +
                                      " save_every_n_steps=4 enable_async_checkpointing=true");
  ASSERT_EQ(async_run.exit_code, 0) << async_run.output;
  EXPECT_NE(async_run.output.find("(in the background)"), std::string::npos) << async_run.output;
  for (const char* tag : {"step_4", "epoch_0", "step_8", "epoch_1"}) {
    SCOPED_TRACE(tag);
    const auto sync_files = files_under(sync_out + "/" + tag);
    const auto async_files = files_under(async_out + "/" + tag);
    ASSERT_FALSE(sync_files.empty());
    EXPECT_EQ(sync_files.size(), async_files.size());
    for (const auto& [name, bytes] : sync_files)
      EXPECT_TRUE(async_files.count(name) && async_files.at(name) == bytes) << name;
  }
  expect_same_trajectory(*reference_, read_jsonl(metrics_of(async_out)), async_run.output);
}

// 2-rank FSDP: each rank's optimizer shard is saved in its own file; a run resumed from a
// mid-epoch checkpoint continues with the uninterrupted run's trajectory and ends with its weights.
TEST(CheckpointResumeSharded, FsdpTwoRanksResumeMidEpochBitwise) {
  const std::string fsdp = " --nproc-per-node 2 batch_size=1 parallelism._component_=fthost.parallelism.fsdp";
  const std::string full = fttest::temp_dir();
  auto a = fttest::run_fthost("--config " + config_in(full) + fsdp + kShape + " save_every_n_steps=3");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_TRUE(
        fs::exists(full + "/step_3/recipe_state/optimizer-rank-0000" + std::to_string(rank) + "-of-00002.safetensors"));
  const auto reference = by_step(read_jsonl(metrics_of(full)));
  ASSERT_EQ(reference.size(), static_cast<std::size_t>(kTotalSteps));

  for (const char* from : {"step_3", "step_9"}) {
    SCOPED_TRACE(from);
    const std::string out = fttest::temp_dir();
    auto b = fttest::run_fthost("--config " + config_in(out) + fsdp + kShape +
                                " enable_async_checkpointing=true resume_from_checkpoint=" + full + "/" + from);
    ASSERT_EQ(b.exit_code, 0) << b.output;
    const int first = std::stoi(std::string(from).substr(5)) + 1;
    std::map<int, json> rest;
    for (const auto& [step, row] : reference)
      if (step >= first) rest[step] = row;
    expect_same_trajectory(rest, read_jsonl(metrics_of(out)), b.output);
    EXPECT_TRUE(fttest::read_file(out + "/epoch_1/model.safetensors") ==
                fttest::read_file(full + "/epoch_1/model.safetensors"));
  }
}

}  // namespace
