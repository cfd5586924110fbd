// core/training_state directly: the manifest's JSON (keys as docs/checkpointing.md lays them
// out), its round trip through read_manifest, the errors naming the file and key, and what
// check_resumable refuses.
#include "train/training_state.h"
#include "test_helpers.h"

#include <ft/errors.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;
using fthost::ParameterShape;
using fthost::RecipeStateManifest;
using fttest::error_of;
using nlohmann::json;

// Every field away from its default, so a field the writer or reader forgets shows.
RecipeStateManifest full_manifest() {
  RecipeStateManifest m;
  fthost::TrainingProgress& p = m.progress;
  p.seed = 18446744073709551557ull;  // above int64: the seed is unsigned
  p.epochs_run = 2;
  p.total_epochs = 5;
  p.max_steps_per_epoch = 40;
  p.steps_run = 93;
  p.epoch = 2;
  p.micro_batches_in_epoch = 26;
  p.batch_size = 4;
  p.gradient_accumulation_steps = 2;
  p.world_size = 4;
  p.data_parallel_size = 2;
  p.expert_parallel_size = 2;
  p.lr_scheduler_last_epoch = 93;
  m.optimizer_sharded = true;
  m.optimizer_files = {fthost::optimizer_file_name(0, 4), fthost::optimizer_file_name(1, 4),
                       fthost::optimizer_file_name(2, 4), fthost::optimizer_file_name(3, 4)};
  m.rng_file = "recipe_state/rng_state.safetensors";
  m.model_dtype = "BFloat16";
  m.model_parameters = {{"model.embed_tokens.weight", {64, 16}}, {"model.norm.weight", {16}}, {"lm_head.bias", {}}};
  m.file_sizes = {{"model.safetensors", 4096}, {"recipe_state/rng_state.safetensors", 5128}};
  return m;
}

std::string write_manifest_file(const std::string& dir, const std::string& text) {
  fs::create_directories(fs::path(dir) / "recipe_state");
  const std::string path = fthost::manifest_path_in(dir);
  std::ofstream(path) << text;
  return path;
}

TEST(TrainingState, FileNamesFollowTheDocumentedLayout) {
  EXPECT_EQ(fthost::optimizer_file_name(1, 2), "recipe_state/optimizer-rank-00001-of-00002.safetensors");
  EXPECT_EQ(fthost::optimizer_file_name(0, 1), "recipe_state/optimizer-rank-00000-of-00001.safetensors");
  EXPECT_EQ(fthost::manifest_path_in("/out/step_40"), "/out/step_40/recipe_state/manifest.json");
}

TEST(TrainingState, ManifestJsonHasTheDocumentedKeys) {
  const json j = json::parse(fthost::manifest_json(full_manifest()));
  EXPECT_EQ(j.at("format"), "fthost.recipe_state");
  EXPECT_EQ(j.at("format_version"), 1);
  EXPECT_EQ(j.at("seed").get<std::uint64_t>(), 18446744073709551557ull);
  EXPECT_EQ(j.at("epochs_run"), 2);
  EXPECT_EQ(j.at("total_epochs"), 5);
  EXPECT_EQ(j.at("max_steps_per_epoch"), 40);
  EXPECT_EQ(j.at("steps_run"), 93);
  EXPECT_EQ(
      j.at("data"),
      (json{{"epoch", 2}, {"micro_batches_in_epoch", 26}, {"batch_size", 4}, {"gradient_accumulation_steps", 2}}));
  EXPECT_EQ(j.at("world_size"), 4);
  EXPECT_EQ(j.at("data_parallel_size"), 2);
  EXPECT_EQ(j.at("expert_parallel_size"), 2);
  EXPECT_EQ(j.at("lr_scheduler").at("last_epoch"), 93);
  EXPECT_EQ(j.at("optimizer").at("sharded"), true);
  EXPECT_EQ(j.at("optimizer").at("files").size(), 4u);
  EXPECT_EQ(j.at("rng").at("file"), "recipe_state/rng_state.safetensors");
  EXPECT_EQ(j.at("model").at("dtype"), "BFloat16");
  EXPECT_EQ(j.at("model").at("parameters").at(0), (json{{"name", "model.embed_tokens.weight"}, {"shape", {64, 16}}}));
  EXPECT_EQ(j.at("files").at("model.safetensors"), 4096);
}

TEST(TrainingState, EveryFieldSurvivesTheRoundTrip) {
  fttest::TempDir dir;
  const RecipeStateManifest m = full_manifest();
  const RecipeStateManifest r = fthost::read_manifest(write_manifest_file(dir.str(), fthost::manifest_json(m)));
  const fthost::TrainingProgress &p = m.progress, &q = r.progress;
  EXPECT_EQ(q.seed, p.seed);
  EXPECT_EQ(q.epochs_run, p.epochs_run);
  EXPECT_EQ(q.total_epochs, p.total_epochs);
  EXPECT_EQ(q.max_steps_per_epoch, p.max_steps_per_epoch);
  EXPECT_EQ(q.steps_run, p.steps_run);
  EXPECT_EQ(q.epoch, p.epoch);
  EXPECT_EQ(q.micro_batches_in_epoch, p.micro_batches_in_epoch);
  EXPECT_EQ(q.batch_size, p.batch_size);
  EXPECT_EQ(q.gradient_accumulation_steps, p.gradient_accumulation_steps);
  EXPECT_EQ(q.world_size, p.world_size);
  EXPECT_EQ(q.data_parallel_size, p.data_parallel_size);
  EXPECT_EQ(q.expert_parallel_size, p.expert_parallel_size);
  EXPECT_EQ(q.lr_scheduler_last_epoch, p.lr_scheduler_last_epoch);
  EXPECT_EQ(r.optimizer_sharded, m.optimizer_sharded);
  EXPECT_EQ(r.optimizer_files, m.optimizer_files);
  EXPECT_EQ(r.rng_file, m.rng_file);
  EXPECT_EQ(r.model_dtype, m.model_dtype);
  ASSERT_EQ(r.model_parameters.size(), m.model_parameters.size());
  for (std::size_t i = 0; i < m.model_parameters.size(); ++i) {
    EXPECT_EQ(r.model_parameters[i].name, m.model_parameters[i].name);
    EXPECT_EQ(r.model_parameters[i].shape, m.model_parameters[i].shape);
  }
  EXPECT_EQ(r.file_sizes, m.file_sizes);
}

TEST(TrainingState, UnsetOptionalsAreNullAndComeBackUnset) {
  fttest::TempDir dir;
  RecipeStateManifest m = full_manifest();
  m.progress.max_steps_per_epoch.reset();
  m.progress.lr_scheduler_last_epoch.reset();
  m.optimizer_sharded = false;
  m.optimizer_files = {fthost::optimizer_file_name(0, 4)};
  const std::string text = fthost::manifest_json(m);
  const json j = json::parse(text);
  EXPECT_TRUE(j.at("max_steps_per_epoch").is_null());
  EXPECT_TRUE(j.at("lr_scheduler").is_null());
  const RecipeStateManifest r = fthost::read_manifest(write_manifest_file(dir.str(), text));
  EXPECT_FALSE(r.progress.max_steps_per_epoch.has_value());
  EXPECT_FALSE(r.progress.lr_scheduler_last_epoch.has_value());
  EXPECT_FALSE(r.optimizer_sharded);
  EXPECT_EQ(r.optimizer_files, m.optimizer_files);
}

TEST(TrainingState, ReadErrorsNameTheFileAndTheKey) {
  fttest::TempDir dir;
  const std::string path = fthost::manifest_path_in(dir.str());
  auto read_with = [&](const std::function<void(json&)>& change) {
    json j = json::parse(fthost::manifest_json(full_manifest()));
    change(j);
    write_manifest_file(dir.str(), j.dump());
    return error_of<ft::Error>([&] { fthost::read_manifest(path); });
  };
  EXPECT_EQ(read_with([](json& j) { j.erase("steps_run"); }),
            path + ": missing key \"steps_run\" (not a complete fthost training checkpoint)");
  EXPECT_EQ(read_with([](json& j) { j["data"].erase("batch_size"); }),
            path + ": missing key \"data.batch_size\" (not a complete fthost training checkpoint)");
  EXPECT_EQ(read_with([](json& j) { j["world_size"] = "four"; }),
            path + ": key \"world_size\" has the wrong type: \"four\"");
  EXPECT_EQ(read_with([](json& j) { j["format"] = "torchtune"; }),
            path + ": format \"torchtune\", expected \"fthost.recipe_state\"");
  EXPECT_EQ(read_with([](json& j) { j["format_version"] = 2; }),
            path + ": format_version 2; this fthost reads version 1");
  EXPECT_EQ(read_with([](json& j) { j.erase("lr_scheduler"); }),
            path + ": missing key \"lr_scheduler\" (null without a scheduler)");
  EXPECT_EQ(read_with([](json& j) { j["optimizer"]["files"] = json::array(); }),
            path + ": key \"optimizer.files\" lists no file");
  EXPECT_EQ(read_with([](json& j) { j["files"]["model.safetensors"] = -1; }),
            path + ": key \"files.model.safetensors\": expected a byte count");

  write_manifest_file(dir.str(), "{\"format\": \"fthost.rec");
  EXPECT_EQ(error_of<ft::Error>([&] { fthost::read_manifest(path); }).rfind(path + ": not valid JSON", 0), 0u);
  const std::string absent = dir.file("elsewhere/manifest.json");
  EXPECT_EQ(error_of<ft::Error>([&] { fthost::read_manifest(absent); }),
            absent + ": cannot read the checkpoint's manifest (missing: not a complete training checkpoint)");
}

// A checkpoint directory on disk whose files have the sizes its manifest records.
class Resumable : public ::testing::Test {
 protected:
  void SetUp() override {
    manifest_ = full_manifest();
    manifest_.file_sizes.clear();
    write_file("model.safetensors", std::string(100, 'w'));
    write_file("recipe_state/rng_state.safetensors", std::string(7, 'r'));
    manifest_path_ = write_manifest_file(dir_.str(), "{}");
  }
  void write_file(const std::string& name, const std::string& bytes) {
    fs::create_directories(fs::path(dir_.file(name)).parent_path());
    std::ofstream(dir_.file(name)) << bytes;
    manifest_.file_sizes[name] = bytes.size();
  }
  std::vector<ParameterShape> model() const { return manifest_.model_parameters; }
  std::string refusal(const std::vector<ParameterShape>& model, int world_size, int data_parallel_size,
                      int expert_parallel_size = 2) {
    return error_of<ft::Error>([&] {
      fthost::check_resumable(manifest_, manifest_path_, model, world_size, data_parallel_size, expert_parallel_size);
    });
  }

  fttest::TempDir dir_;
  RecipeStateManifest manifest_;
  std::string manifest_path_;
};

TEST_F(Resumable, TheSameModelAndRanksResume) {
  EXPECT_NO_THROW(fthost::check_resumable(manifest_, manifest_path_, model(), 4, 2, 2));
  // The order of the model's parameters does not matter, only names and shapes.
  const std::vector<ParameterShape> ours = model();
  const std::vector<ParameterShape> reversed(ours.rbegin(), ours.rend());
  EXPECT_NO_THROW(fthost::check_resumable(manifest_, manifest_path_, reversed, 4, 2, 2));
}

TEST_F(Resumable, AnotherModelIsRefused) {
  const std::string another = manifest_path_ + ": the checkpoint belongs to another model: ";
  auto renamed = model();
  renamed[1].name = "model.final_norm.weight";
  EXPECT_EQ(refusal(renamed, 4, 2),
            another + "it has parameter \"model.norm.weight\", this model has none of that name");
  auto reshaped = model();
  reshaped[0].shape = {64, 32};
  EXPECT_EQ(refusal(reshaped, 4, 2),
            another + "parameter \"model.embed_tokens.weight\" is [64, 16] there, [64, 32] in this model");
  auto larger = model();
  larger.push_back({"lm_head.weight", {64, 16}});
  EXPECT_EQ(refusal(larger, 4, 2), another + "this model's parameter \"lm_head.weight\" is not in it (1 missing)");
}

TEST_F(Resumable, AnotherWorldSizeOrDataParallelSizeIsRefused) {
  const std::string expected_world = manifest_path_ +
                                     ": written by a run of world size 4 (2 data-parallel ranks), this run has 2 (2); "
                                     "resume with the same number of ranks (--nproc-per-node)";
  EXPECT_EQ(refusal(model(), 2, 2), expected_world);
  // Same number of ranks, split differently between data parallelism and sharding.
  EXPECT_EQ(refusal(model(), 4, 4), manifest_path_ +
                                        ": written by a run of world size 4 (2 data-parallel ranks), this run has 4 "
                                        "(4); resume with the same number of ranks (--nproc-per-node)");
}

TEST_F(Resumable, AnotherExpertParallelSizeIsRefused) {
  EXPECT_EQ(
      refusal(model(), 4, 2, 1),
      manifest_path_ +
          ": written by a run with expert_parallel_dim = 2, this run has 1 (each rank's optimizer state holds its "
          "share of the experts); resume with the same expert_parallel_dim");
}

TEST(TrainingState, AManifestWithoutExpertParallelSizeHeldEveryExpertOnEveryRank) {
  fttest::TempDir dir;
  RecipeStateManifest m = full_manifest();
  m.progress.expert_parallel_size = 1;
  std::string text = fthost::manifest_json(m);
  const std::string field = "  \"expert_parallel_size\": 1,\n";
  ASSERT_NE(text.find(field), std::string::npos);
  text.erase(text.find(field), field.size());
  EXPECT_EQ(fthost::read_manifest(write_manifest_file(dir.str(), text)).progress.expert_parallel_size, 1);
}

TEST_F(Resumable, MissingOrTruncatedFilesAreRefusedByName) {
  fs::remove(dir_.file("recipe_state/rng_state.safetensors"));
  EXPECT_EQ(refusal(model(), 4, 2), (fs::path(dir_.str()) / "recipe_state/rng_state.safetensors").string() +
                                        ": missing from the checkpoint (" + manifest_path_ + " lists it)");
  write_file("recipe_state/rng_state.safetensors", std::string(7, 'r'));
  std::ofstream(dir_.file("model.safetensors"), std::ios::trunc) << std::string(60, 'w');
  EXPECT_EQ(refusal(model(), 4, 2), (fs::path(dir_.str()) / "model.safetensors").string() + ": 60 bytes, but " +
                                        manifest_path_ + " records 100 (truncated or modified)");
}

}  // namespace
