// torchtune's top-level spellings turned into fthost's component tables: each rewrite on its own,
// the collate function torchtune picks for packed data, and the run a rewrite must not break.
#include "test_helpers.h"

#include "config/config_loader.h"
#include "config/torchtune_key_rewrites.h"

#include <ft/errors.h>

#include <gtest/gtest.h>
#include <boost/filesystem.hpp>

using fttest::error_of;

namespace {

struct Loaded {
  std::shared_ptr<ft::detail::ConfigDocument> doc;
  ft::ConfigNode root;
};

Loaded load(const std::string& text, const std::string& file_name = "run.toml",
            const std::vector<std::string>& overrides = {}) {
  auto doc = fthost::load_config(fttest::write_temp(file_name, text), overrides);
  return {doc, ft::detail::root_node(doc)};
}

// Temp file paths vary; compare from the file name on.
std::string from_file_name(const std::string& msg, const std::string& file_name) {
  auto pos = msg.find(file_name);
  return pos == std::string::npos ? msg : msg.substr(pos);
}

const char* kUnpacked = "[dataset]\n_component_ = \"torchtune.datasets.alpaca_dataset\"\n";
const char* kPacked = "[dataset]\n_component_ = \"torchtune.datasets.alpaca_dataset\"\npacked = true\n";

std::string collate_of(const std::string& text) {
  Loaded c = load(text);
  fthost::rewrite_collate_fn(*c.doc, c.root);
  return c.root.table("collate").component();
}

TEST(TorchtuneKeyRewrites, CollateTableStillGetsParallelism) {
  // A [collate] table used to stop every other rewrite, so the run failed on a missing [parallelism].
  Loaded c = load("[collate]\n_component_ = \"torchtune.data.padded_collate_sft\"\n");
  fthost::rewrite_torchtune_keys(*c.doc, c.root);
  ASSERT_TRUE(c.root.is_table("parallelism"));
  EXPECT_EQ(c.root.table("parallelism").component(), "fthost.parallelism.single");
  EXPECT_EQ(c.root.table("collate").component(), "torchtune.data.padded_collate_sft");
}

TEST(TorchtuneKeyRewrites, SeveralRanksShardWithTheTopLevelFsdpKeys) {
  Loaded c = load("fsdp_reshard_after_forward = false\ncustom_sharded_layers = [\"output\"]\n");
  fthost::rewrite_parallelism_keys(*c.doc, c.root, /*world_size=*/2, /*rank=*/1);
  const ft::ConfigNode p = c.root.table("parallelism");
  EXPECT_EQ(p.component(), "fthost.parallelism.fsdp");
  EXPECT_FALSE(p.get<bool>("reshard_after_forward"));
  EXPECT_EQ(p.get<std::vector<std::string>>("custom_sharded_layers"), std::vector<std::string>{"output"});
}

TEST(TorchtuneKeyRewrites, MovedFsdpKeysLeaveTheTopLevel) {
  // The effective config is written from the rewritten document and must load again.
  Loaded c = load("fsdp_cpu_offload = true\ndata_parallel_shard_dim = 2\n");
  fthost::rewrite_parallelism_keys(*c.doc, c.root, /*world_size=*/2, /*rank=*/1);
  EXPECT_TRUE(c.root.table("parallelism").get<bool>("cpu_offload"));
  EXPECT_EQ(c.root.table("parallelism").get<std::int64_t>("data_parallel_shard_dim"), 2);
  EXPECT_FALSE(c.root.has("fsdp_cpu_offload"));
  EXPECT_FALSE(c.root.has("data_parallel_shard_dim"));
}

// A moved key's problems name the line the user wrote it on (YAML and TOML) or the command line, as the key it was
// moved from would: never the command line for a key from the file.
TEST(TorchtuneKeyRewrites, MovedKeysKeepWhereTheyWereWritten) {
  const std::string yaml = "seed: 0\n\nfsdp_cpu_offload: sometimes\ncollate_fn: acme.collate\n";
  auto cpu_offload = [](const Loaded& c) {
    return error_of<ft::ConfigError>([&] { c.root.table("parallelism").get<bool>("cpu_offload"); });
  };
  Loaded from_yaml = load(yaml, "run.yaml");
  fthost::rewrite_torchtune_keys(*from_yaml.doc, from_yaml.root, /*world_size=*/2, /*rank=*/1);
  EXPECT_EQ(from_file_name(cpu_offload(from_yaml), "run.yaml"),
            "run.yaml:3: parallelism.cpu_offload: expected a boolean, got string \"sometimes\"");
  EXPECT_EQ(from_file_name(from_yaml.root.table("collate").origin("_component_"), "run.yaml"), "run.yaml:4");
  // The strategy fthost chose was written by no one: it names the file, not the command line.
  EXPECT_EQ(from_file_name(from_yaml.root.table("parallelism").origin("_component_"), "run.yaml"), "run.yaml");

  Loaded from_toml = load("fsdp_cpu_offload = \"sometimes\"\n", "run.toml");
  fthost::rewrite_torchtune_keys(*from_toml.doc, from_toml.root, /*world_size=*/2, /*rank=*/1);
  EXPECT_EQ(from_file_name(cpu_offload(from_toml), "run.toml"),
            "run.toml:1: parallelism.cpu_offload: expected a boolean, got string \"sometimes\"");

  Loaded overridden = load(yaml, "run.yaml", {"fsdp_cpu_offload=never", "collate_fn=acme.other"});
  fthost::rewrite_torchtune_keys(*overridden.doc, overridden.root, /*world_size=*/2, /*rank=*/1);
  EXPECT_EQ(cpu_offload(overridden), "command line: parallelism.cpu_offload: expected a boolean, got string \"never\"");
  EXPECT_EQ(overridden.root.table("collate").origin("_component_"), "command line");
}

TEST(TorchtuneKeyRewrites, TopLevelFsdpKeyBesideAParallelismTableIsRefused) {
  // The table's strategy would never see it: refused instead of silently unused.
  Loaded c = load("custom_sharded_layers = [\"output\"]\n[parallelism]\n_component_ = \"fthost.parallelism.fsdp\"\n");
  try {
    fthost::rewrite_parallelism_keys(*c.doc, c.root, /*world_size=*/2, /*rank=*/0);
    FAIL() << "expected a ConfigError";
  } catch (const ft::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("custom_sharded_layers"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("parallelism.custom_sharded_layers"), std::string::npos) << e.what();
  }
}

TEST(TorchtuneKeyRewrites, CollateFnBecomesATable) {
  EXPECT_EQ(collate_of(kUnpacked), "torchtune.data.padded_collate_sft");
  Loaded c = load(std::string("collate_fn = \"acme.my_collate\"\n") + kUnpacked);
  fthost::rewrite_collate_fn(*c.doc, c.root);
  EXPECT_EQ(c.root.table("collate").component(), "acme.my_collate");
  EXPECT_FALSE(c.root.has("collate_fn"));
}

TEST(TorchtuneKeyRewrites, PackedDataIsCollatedAsPacks) {
  // torchtune's recipe uses padded_collate_packed for packed data whatever collate_fn says.
  EXPECT_EQ(collate_of(kPacked), "torchtune.data.padded_collate_packed");
  EXPECT_EQ(collate_of(std::string("collate_fn = \"torchtune.data.padded_collate_sft\"\n") + kPacked),
            "torchtune.data.padded_collate_packed");
  EXPECT_EQ(
      collate_of("[[dataset]]\n_component_ = \"a\"\npacked = true\n[[dataset]]\n_component_ = \"b\"\npacked = true\n"),
      "torchtune.data.padded_collate_packed");
}

TEST(TorchtuneKeyRewrites, PackedDataRefusesACollateThatMixesDocuments) {
  const std::string message = fttest::error_of<ft::ConfigError>(
      [] { collate_of(std::string(kPacked) + "[collate]\n_component_ = \"torchtune.data.padded_collate_sft\"\n"); });
  EXPECT_NE(message.find("collate: torchtune.data.padded_collate_sft would let the documents of a pack attend"),
            std::string::npos)
      << message;
}

TEST(TorchtuneKeyRewrites, MixedPackedAndUnpackedDatasetsAreRefused) {
  const std::string message = fttest::error_of<ft::ConfigError>(
      [] { collate_of("[[dataset]]\n_component_ = \"a\"\npacked = true\n[[dataset]]\n_component_ = \"b\"\n"); });
  EXPECT_NE(message.find("1 of the 2 datasets set packed = true"), std::string::npos) << message;
}

// torchtune's single-device configs keep N checkpoints with the checkpointer's
// keep_last_n_checkpoints: fthost's keep_last_n, moved to the top level where the recipe reads it.
TEST(TorchtuneKeyRewrites, CheckpointerKeepLastNCheckpointsBecomesKeepLastN) {
  const std::string yaml = "seed: 0\ncheckpointer:\n  _component_: x\n  keep_last_n_checkpoints: 2\n";
  Loaded c = load(yaml, "run.yaml");
  fthost::rewrite_torchtune_keys(*c.doc, c.root, /*world_size=*/1, /*rank=*/-1);
  EXPECT_EQ(c.root.get<std::int64_t>("keep_last_n"), 2);
  EXPECT_FALSE(c.root.table("checkpointer").has("keep_last_n_checkpoints"));
  EXPECT_EQ(from_file_name(c.root.origin("keep_last_n"), "run.yaml"), "run.yaml:4");

  Loaded both = load(yaml + "keep_last_n: 3\n", "run.yaml");
  EXPECT_NE(error_of<ft::ConfigError>([&] { fthost::rewrite_checkpoint_retention(*both.doc, both.root); })
                .find("keep_last_n: give the number of checkpoints to keep once: keep_last_n or "
                      "checkpointer.keep_last_n_checkpoints"),
            std::string::npos);
  Loaded zero = load("[checkpointer]\n_component_ = \"x\"\nkeep_last_n_checkpoints = 0\n");
  EXPECT_NE(error_of<ft::ConfigError>([&] {
              fthost::rewrite_checkpoint_retention(*zero.doc, zero.root);
            }).find("checkpointer.keep_last_n_checkpoints: expected an integer >= 1"),
            std::string::npos);
}

// The real run keeps only the newest 2 of its 4 step checkpoints.
TEST(TorchtuneKeyRewrites, KeepLastNCheckpointsPrunesARun) {
  const std::string out = fttest::temp_dir();
  const auto result =
      fttest::run_fthost("--config " + std::string(FT_SOURCE_DIR) +
                         "/configs/tiny_demo.toml epochs=1 max_steps_per_epoch=4 save_every_n_steps=1 "
                         "checkpointer.keep_last_n_checkpoints=2 output_dir=" +
                         out + " dataset.source=" + std::string(FT_SOURCE_DIR) + "/configs/demo/sort_tokens.jsonl");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_FALSE(boost::filesystem::exists(out + "/step_1"));
  EXPECT_FALSE(boost::filesystem::exists(out + "/step_2"));
  EXPECT_TRUE(boost::filesystem::exists(out + "/step_3"));
  EXPECT_TRUE(boost::filesystem::exists(out + "/epoch_0"));
  EXPECT_NE(result.output.find("(keep_last_n = 2)"), std::string::npos) << result.output;
}

TEST(TorchtuneKeyRewrites, RunWithACollateTableAndNoParallelismTable) {
  const std::string out = fttest::temp_dir();
  const auto result = fttest::run_fthost("--config " + std::string(FT_SOURCE_DIR) +
                                         "/configs/tiny_demo.toml epochs=1 max_steps_per_epoch=2 output_dir=" + out +
                                         " collate._component_=torchtune.data.padded_collate_sft dataset.source=" +
                                         std::string(FT_SOURCE_DIR) + "/configs/demo/sort_tokens.jsonl");
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

}  // namespace
