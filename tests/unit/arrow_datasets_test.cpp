// Datasets where users keep them, through `fthost data --json`: the shared Alpaca fixture as
// Hugging Face `datasets` and pyarrow write it (Parquet in one or several row groups and shards,
// CSV, save_to_disk directories, a DatasetDict, a Hub cache laid out as huggingface_hub does)
// gives byte for byte what the JSON it came from gives; a chat column of structs reads as the
// JSON messages do; damaged or mistyped files fail naming the file. With `streaming = true`
// (records read from their files when drawn) the samples are the same, and a streamed run stopped
// mid-epoch resumes to the in-memory run's trajectory bit for bit. The fixtures are made by
// tests/dataset_fixtures/make_dataset_fixtures.py (the dataset_fixtures ctest fixture).
#include "resume_reference.h"
#include "running_fthost.h"
#include "test_helpers.h"
#include "text_data_support.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string fixtures() { return FT_DATASET_FIXTURE_DIR; }

struct Data {
  int exit_code;
  std::string out, err;
};

// `fthost data --json` of the tiny Alpaca config with `source_args` naming the data.
Data data_json(const std::string& source_args, const std::string& environment = "") {
  const fttest::TempDir dir;
  const std::string cmd = "env " + (environment.empty() ? "-u HF_HUB_CACHE" : environment) + " " +
                          std::string(FTHOST_BINARY) + " data --json --config " + std::string(FT_SOURCE_DIR) +
                          "/configs/tiny_alpaca_llama3.toml tokenizer.path=" + fttest::tokenizers_dir() +
                          "/llama3/tokenizer.json " + source_args + " 2>" + dir.file("stderr.txt");
  const auto r = fttest::run_command_stdout(cmd);
  return {r.exit_code, r.output, fttest::read_file(dir.file("stderr.txt"))};
}

std::string hub_cache() { return "HF_HUB_CACHE=" + fixtures() + "/hub"; }

std::size_t samples_in(const Data& d) {
  std::size_t n = 0;
  std::istringstream in(d.out);
  for (std::string line; std::getline(in, line);) n += nlohmann::json::parse(line).contains("tokens");
  return n;
}

TEST(ArrowDatasets, EveryFormOfTheRecordsGivesTheSameSamples) {
  const Data reference = data_json("dataset.source=" + fttest::data_dir() + "/alpaca_tiny.json");
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  const int n = nlohmann::json::parse(fttest::read_file(fixtures() + "/counts.json")).at("alpaca").get<int>();
  ASSERT_EQ(samples_in(reference), static_cast<std::size_t>(n)) << reference.out.substr(0, 2000);
  struct Form {
    std::string what, args, environment;
  };
  const std::string d = fixtures();
  for (const Form& f : {
           Form{"Parquet (datasets' to_parquet)", "dataset.source=" + d + "/alpaca.parquet", ""},
           Form{"Parquet in row groups of 30", "dataset.source=" + d + "/alpaca_row_groups.parquet", ""},
           Form{"source = parquet, data_files a glob",
                "dataset.source=parquet 'dataset.data_files=" + d + "/alpaca_shards/part-*.parquet'", ""},
           Form{"source = parquet, data_files a directory",
                "dataset.source=parquet dataset.data_files=" + d + "/alpaca_shards", ""},
           Form{"source = parquet, data_files a list",
                "dataset.source=parquet 'dataset.data_files=[\"" + d + "/alpaca_shards/part-00000.parquet\", \"" + d +
                    "/alpaca_shards/part-00001.parquet\", \"" + d + "/alpaca_shards/part-00002.parquet\"]'",
                ""},
           Form{"a directory of Parquet shards", "dataset.source=" + d + "/alpaca_shards", ""},
           Form{"CSV", "dataset.source=" + d + "/alpaca.csv", ""},
           Form{"save_to_disk, 2 shards", "dataset.source=" + d + "/alpaca_saved", ""},
           Form{"the Hub cache, JSON", "dataset.source=fthost-tests/alpaca-json", hub_cache()},
           Form{"the Hub cache under HF_HOME", "dataset.source=fthost-tests/alpaca-json",
                "-u HF_HUB_CACHE HF_HOME=" + d},
           Form{"JSON Lines, streaming", "dataset.source=" + d + "/alpaca.jsonl dataset.streaming=true", ""},
           Form{"Parquet in row groups, streaming",
                "dataset.source=" + d + "/alpaca_row_groups.parquet dataset.streaming=true", ""},
           Form{"Parquet shards, streaming", "dataset.source=" + d + "/alpaca_shards dataset.streaming=true", ""},
           Form{"save_to_disk, streaming", "dataset.source=" + d + "/alpaca_saved dataset.streaming=true", ""},
           Form{"CSV, streaming", "dataset.source=" + d + "/alpaca.csv dataset.streaming=true", ""},
           // The loader's worker threads read, tokenize and collate out of order; the output keeps its order.
           Form{"JSON Lines, streaming, 2 workers",
                "dataset.source=" + d + "/alpaca.jsonl dataset.streaming=true num_workers=2", ""},
           Form{"Parquet shards, streaming, 3 workers",
                "dataset.source=" + d + "/alpaca_shards dataset.streaming=true num_workers=3", ""},
           Form{"save_to_disk, 2 workers", "dataset.source=" + d + "/alpaca_saved num_workers=2", ""},
       }) {
    SCOPED_TRACE(f.what);
    const Data got = data_json(f.args, f.environment);
    ASSERT_EQ(got.exit_code, 0) << got.err;
    EXPECT_TRUE(got.out == reference.out) << "differs from the JSON's output";
  }
}

// Splits: a DatasetDict's subdirectory and a Hub repo's split files, each equal to the JSON
// Lines of the same split; a Hub tag names its own commit.
TEST(ArrowDatasets, SplitsAndRevisions) {
  const std::string d = fixtures();
  for (const std::string split : {"train", "test"}) {
    SCOPED_TRACE(split);
    const Data reference = data_json("dataset.source=json dataset.data_files=" + d + "/alpaca_" + split + ".jsonl");
    ASSERT_EQ(reference.exit_code, 0) << reference.err;
    const Data dict = data_json("dataset.source=" + d + "/alpaca_dict dataset.split=" + split);
    ASSERT_EQ(dict.exit_code, 0) << dict.err;
    EXPECT_TRUE(dict.out == reference.out);
    const Data hub = data_json("dataset.source=fthost-tests/alpaca dataset.split=" + split, hub_cache());
    ASSERT_EQ(hub.exit_code, 0) << hub.err;
    EXPECT_TRUE(hub.out == reference.out);
  }
  // The tag v0.1's commit holds the test records as its train split.
  const Data test = data_json("dataset.source=json dataset.data_files=" + d + "/alpaca_test.jsonl");
  const Data tagged = data_json("dataset.source=fthost-tests/alpaca dataset.revision=v0.1", hub_cache());
  ASSERT_EQ(tagged.exit_code, 0) << tagged.err;
  EXPECT_TRUE(tagged.out == test.out);
  const Data sliced = data_json("dataset.source=fthost-tests/alpaca 'dataset.split=test[:10]'", hub_cache());
  ASSERT_EQ(sliced.exit_code, 0) << sliced.err;
  EXPECT_EQ(samples_in(sliced), 10u);
  // data_files names a Hub dataset's own files, relative to its snapshot (torchtune's
  // llava_instruct_dataset reads llava_instruct_150k.json so): here the test split's file alone.
  const Data named =
      data_json("dataset.source=fthost-tests/alpaca dataset.data_files=data/test-00000-of-00001.parquet", hub_cache());
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_TRUE(named.out == test.out);
}

// A list<struct<...>> column (chat messages) reads as the JSON's list of objects.
TEST(ArrowDatasets, ChatMessagesFromParquet) {
  const std::string chat =
      " dataset._component_=torchtune.datasets.chat_dataset dataset.conversation_column=conversations "
      "dataset.conversation_style=sharegpt ~dataset.train_on_input";
  const Data reference = data_json("dataset.source=" + fttest::data_dir() + "/chat_tiny.json" + chat);
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  const Data parquet = data_json("dataset.source=" + fixtures() + "/chat.parquet" + chat);
  ASSERT_EQ(parquet.exit_code, 0) << parquet.err;
  EXPECT_TRUE(parquet.out == reference.out);
}

// A slice of streamed records is the same slice of the records in memory.
TEST(StreamingDatasets, SlicesMatchTheRecordsInMemory) {
  const std::string d = fixtures();
  for (const std::string source : {"/alpaca.jsonl", "/alpaca_shards"}) {
    SCOPED_TRACE(source);
    const Data in_memory = data_json("dataset.source=" + d + source + " 'dataset.split=train[10:70]'");
    ASSERT_EQ(in_memory.exit_code, 0) << in_memory.err;
    EXPECT_EQ(samples_in(in_memory), 60u);
    const Data streamed =
        data_json("dataset.source=" + d + source + " 'dataset.split=train[10:70]' dataset.streaming=true");
    ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
    EXPECT_TRUE(streamed.out == in_memory.out);
  }
}

// A streamed run (JSON Lines read record by record) stopped by SIGTERM mid-epoch and resumed
// logs exactly the rows of the run that held its records in memory and was never stopped, and
// ends with its weights.
TEST(StreamingDatasets, AStreamedRunStoppedMidEpochResumesToTheInMemoryRun) {
  auto args = [](const std::string& out, const std::string& source) {
    return "--config " + std::string(FT_SOURCE_DIR) +
           "/configs/tiny_alpaca_llama3.toml tokenizer.path=" + fttest::tokenizers_dir() +
           "/llama3/tokenizer.json dataset.source=" + source + " output_dir=" + out +
           " epochs=2 max_steps_per_epoch=8 num_threads=1 "
           "metric_logger._component_=torchtune.training.metric_logging.DiskLogger metric_logger.log_dir=" +
           out + "/logs metric_logger.filename=metrics.jsonl metric_logger.output_fmt=jsonl";
  };
  const std::string reference = fttest::temp_dir();
  const auto full = fttest::run_fthost(args(reference, fttest::data_dir() + "/alpaca_tiny.json"));
  ASSERT_EQ(full.exit_code, 0) << full.output;

  const std::string out = fttest::temp_dir();
  const std::string streamed = args(out, fixtures() + "/alpaca.jsonl") + " dataset.streaming=true";
  {
    fttest::RunningFthost run(streamed, out + "/run.log");
    auto logged = [&] {
      const std::string text = fttest::read_file(out + "/logs/metrics.jsonl");
      return std::count(text.begin(), text.end(), '\n');
    };
    while (run.running() && logged() < 5) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    run.signal(SIGTERM);
    ASSERT_EQ(run.wait(), 75) << fttest::read_file(out + "/run.log");
  }
  const auto resumed = fttest::run_fthost(streamed + " resume_from_checkpoint=true");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from " + out + "/"), std::string::npos) << resumed.output;
  EXPECT_EQ(fttest::resume::trajectory(out), fttest::resume::trajectory(reference))
      << "a step differs, repeats or is missing";
  EXPECT_TRUE(fttest::read_file(out + "/epoch_1/model.safetensors") ==
              fttest::read_file(reference + "/epoch_1/model.safetensors"))
      << "final weights differ";
}

TEST(ArrowDatasets, BadInputNamesTheFileAndWhatWasExpected) {
  const std::string d = fixtures();
  struct Case {
    std::string args, environment;
    std::vector<std::string> messages;
  };
  for (const Case& c : {
           Case{"dataset.source=" + d + "/truncated.parquet",
                "",
                {d + "/truncated.parquet: not a readable Parquet file", "magic bytes"}},
           Case{"dataset.source=" + d + "/no_instruction.parquet",
                "",
                {"source = \"" + d + "/no_instruction.parquet\": record 0 has no column \"instruction\""}},
           Case{"dataset.source=" + d + "/int_instruction.parquet",
                "",
                {"source = \"" + d + "/int_instruction.parquet\": record 0: column \"instruction\" is not text"}},
           Case{"dataset.source=" + d + "/empty.parquet", "", {"selects no records (the source has 0)"}},
           Case{"dataset.source=fthost-tests/not-there",
                hub_cache(),
                {"not in the local cache (looked for " + d + "/hub/datasets--fthost-tests--not-there",
                 "the cache is HF_HUB_CACHE", "hf download fthost-tests/not-there --repo-type dataset"}},
           Case{"dataset.source=fthost-tests/alpaca dataset.revision=v9",
                hub_cache(),
                {"has no revision \"v9\" (refs: main, v0.1)"}},
           Case{"dataset.source=fthost-tests/alpaca dataset.split=validation",
                hub_cache(),
                {"has no split \"validation\" (its parquet files make the splits test, train)"}},
           Case{"dataset.source=" + d + "/alpaca_dict dataset.split=validation",
                "",
                {"DatasetDict (dataset_dict.json) has no split \"validation\""}},
           Case{"dataset.source=parquet 'dataset.data_files=" + d + "/nothing-*.parquet'",
                "",
                {"the pattern matches no file"}},
           Case{"dataset.source=" + d + "/alpaca.parquet dataset.split=test", "", {"has only the \"train\" split"}},
       }) {
    SCOPED_TRACE(c.args);
    const Data got = data_json(c.args, c.environment);
    EXPECT_NE(got.exit_code, 0);
    for (const auto& m : c.messages) EXPECT_NE(got.err.find(m), std::string::npos) << m << "\n" << got.err;
    EXPECT_EQ(got.out, "");
  }
}

}  // namespace
