// Swapping the metric logger of a real run with command-line overrides only: the fthost binary
// trains the demo model, and the files each logger wrote are read back independently.
#include "logger_test_support.h"
#include "wire_decoder.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace {

using fttest::Message;

const std::string kDemoRun = "--config " + std::string(FT_SOURCE_DIR) +
                             "/configs/tiny_demo.toml dataset.source=" + FT_SOURCE_DIR +
                             "/configs/demo/sort_tokens.jsonl epochs=1 max_steps_per_epoch=10 log_every_n_steps=1";

TEST(LoggerCli, TensorBoardLoggerBySwappingTheComponent) {
  const std::string dir = fttest::temp_dir();
  auto r = fttest::run_fthost(kDemoRun + " output_dir=" + dir + "/out" +
                              " metric_logger._component_=torchtune.training.metric_logging.TensorBoardLogger" +
                              " metric_logger.log_dir=" + dir + "/tb");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto files = fttest::files_under(dir + "/tb");
  ASSERT_EQ(files.size(), 1u);
  std::map<std::string, std::vector<std::int64_t>> steps_by_tag;
  std::vector<float> losses;
  for (const auto& record : fttest::read_tfrecords(fttest::read_file(files[0]))) {
    const Message event(record);
    if (!event.has(5)) continue;
    const Message value = event.message_field(5).messages(1).at(0);
    if (value.message_field(9).message_field(1).string_field(1) != "scalars") continue;
    steps_by_tag[value.string_field(1)].push_back(event.int_field(2));
    if (value.string_field(1) == "loss") losses.push_back(value.message_field(8).floats(5).at(0));
  }
  const std::vector<std::int64_t> every_step = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  for (const char* tag : {"loss", "lr", "tokens_per_second_per_gpu", "grad_norm", "num_tokens"})
    EXPECT_EQ(steps_by_tag[tag], every_step) << tag;
  ASSERT_EQ(losses.size(), 10u);
  for (float loss : losses) EXPECT_TRUE(loss > 0.5f && loss < 5.0f) << loss;
}

TEST(LoggerCli, WandBLoggerBySwappingTheComponent) {
  const std::string dir = fttest::temp_dir();
  auto r = fttest::run_fthost(kDemoRun + " output_dir=" + dir + "/out" +
                              " metric_logger._component_=torchtune.training.metric_logging.WandBLogger" +
                              " metric_logger.log_dir=" + dir + "/wb metric_logger.project=demo");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("wandb sync " + dir + "/wb/wandb/offline-run-"), std::string::npos) << r.output;
  std::vector<std::string> logs;
  for (const auto& f : fttest::files_under(dir + "/wb"))
    if (f.size() > 6 && f.compare(f.size() - 6, 6, ".wandb") == 0) logs.push_back(f);
  ASSERT_EQ(logs.size(), 1u);
  std::vector<Message> records;
  for (const auto& rec : fttest::read_wandb_log(fttest::read_file(logs[0]))) records.emplace_back(rec);
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records[0].message_field(17).string_field(3), "demo");
  std::vector<std::int64_t> steps;
  for (const auto& rec : records) {
    if (!rec.has(2)) continue;
    for (const auto& item : rec.message_field(2).messages(1))
      if (item.string_field(1) == "_step")
        steps.push_back(nlohmann::json::parse(item.string_field(16)).get<std::int64_t>());
  }
  EXPECT_EQ(steps, (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(records.back().has(20), true) << "final record";
  EXPECT_EQ(records[records.size() - 2].message_field(18).int_field(1), 0) << "exit code 0";
}

TEST(LoggerCli, MisspelledLoggerGetsSuggestions) {
  auto r = fttest::run_fthost(kDemoRun +
                              " output_dir=/tmp/unused-logger-run"
                              " metric_logger._component_=torchtune.training.metric_logging.TensorBoardLoger");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("did you mean 'torchtune.training.metric_logging.TensorBoardLogger'"), std::string::npos)
      << r.output;
}

TEST(LoggerCli, LsListsTheNewLoggersWithTheirKeys) {
  auto r = fttest::run_fthost("ls metric_logger -v");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* text : {"torchtune.training.metric_logging.TensorBoardLogger", "organize_logs",
                           "torchtune.training.metric_logging.WandBLogger", "log_strategy"})
    EXPECT_NE(r.output.find(text), std::string::npos) << text << "\n" << r.output;
}

}  // namespace
