// The training-checkpoint role of checkpointers, where a user meets it: `fthost validate` (and so
// every run) refuses a checkpointer whose registration does not declare the role, naming
// `checkpointer._component_`, and accepts one that does; a plugin that declares the role without
// providing it fails the run before training. The checkpointers come from the test plugin
// test_plugins/model_only_checkpointer.cpp.
#include "test_helpers.h"

#include <gtest/gtest.h>

#include <string>

namespace {

const std::string kDemo = std::string(FT_SOURCE_DIR) + "/configs/tiny_demo.toml";
const std::string kTestPlugins = std::string(" --plugin-dir ") + FT_TEST_PLUGIN_ROOT + "/model_only_checkpointer";

fttest::CommandResult validate_with(const std::string& checkpointer) {
  return fttest::run_fthost("validate --config " + kDemo + kTestPlugins + " checkpointer._component_=" + checkpointer);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(CheckpointerRole, ValidateRefusesACheckpointerWithoutTrainingCheckpointStorage) {
  const auto r = validate_with("acme.test.ModelOnlyCheckpointer");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "1 problem(s)")) << r.output;
  EXPECT_TRUE(contains(r.output, "command line: checkpointer._component_: 'acme.test.ModelOnlyCheckpointer'"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "cannot store training checkpoints")) << r.output;
  EXPECT_TRUE(contains(r.output, "libtest_model_only_checkpointer.so")) << r.output;
}

TEST(CheckpointerRole, ValidateAcceptsACheckpointerDeclaringTheRole) {
  const auto r = validate_with("acme.test.StoringCheckpointer");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto hf = validate_with("torchtune.training.FullModelHFCheckpointer");
  EXPECT_EQ(hf.exit_code, 0) << hf.output;
}

// The other checks keep reporting their own problems; the role check adds none for a name
// that is not a known checkpointer.
TEST(CheckpointerRole, UnknownOrWrongKindComponentsAreReportedOnceByTheRegistry) {
  const auto unknown = validate_with("acme.test.NoSuchCheckpointer");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_TRUE(contains(unknown.output, "1 problem(s)")) << unknown.output;
  EXPECT_TRUE(contains(unknown.output, "unknown component 'acme.test.NoSuchCheckpointer'")) << unknown.output;
  EXPECT_FALSE(contains(unknown.output, "cannot store training checkpoints")) << unknown.output;
}

TEST(CheckpointerRole, RunRefusesACheckpointerThatDeclaresTheRoleWithoutProvidingIt) {
  fttest::TempDir out;
  const auto r = fttest::run_fthost("--config " + kDemo + kTestPlugins +
                                    " checkpointer._component_=acme.test.LyingCheckpointer output_dir=" + out.str() +
                                    " epochs=1 max_steps_per_epoch=1 dataset.source=" + FT_SOURCE_DIR +
                                    "/configs/demo/sort_tokens.jsonl");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "training_checkpoint_storage() returned none")) << r.output;
}

}  // namespace
