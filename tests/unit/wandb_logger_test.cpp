// torchtune.training.metric_logging.WandBLogger (offline) through the host's plugin loader; the
// .wandb file read back with the independent reader (field numbers from wandb_internal.proto).
#include "logger_test_support.h"
#include "wire_decoder.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <regex>

namespace {

using fttest::Message;

// wandb_internal.Record fields.
constexpr int kNum = 1, kHistory = 2, kSummary = 3, kConfig = 5, kRun = 17, kExit = 18, kFinal = 20;

std::string wandb_table(const std::string& dir, const std::string& extra = "") {
  return "_component_ = \"torchtune.training.metric_logging.WandBLogger\"\nlog_dir = \"" + dir +
         "\"\nproject = \"fthost-test\"\n" + extra;
}

// key -> parsed value_json of a repeated (key = 1, value_json = 16) item field.
std::map<std::string, nlohmann::json> items_of(const Message& m, int field) {
  std::map<std::string, nlohmann::json> out;
  for (const auto& item : m.messages(field)) out[item.string_field(1)] = nlohmann::json::parse(item.string_field(16));
  return out;
}

std::vector<std::string> wandb_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& f : fttest::files_under(dir))
    if (f.size() > 6 && f.compare(f.size() - 6, 6, ".wandb") == 0) out.push_back(f);
  return out;
}

std::vector<Message> records_of(const std::string& path) {
  std::vector<Message> out;
  for (const auto& r : fttest::read_wandb_log(fttest::read_file(path))) out.emplace_back(r);
  return out;
}

TEST(WandBLogger, OfflineRunHasRunConfigHistorySummaryExitFinal) {
  const std::string dir = fttest::temp_dir() + "/logs";
  auto logger = fttest::make_logger(wandb_table(dir, "entity = \"team\"\ngroup = \"sweep\"\nname = \"first\"\n"));
  logger->log_config(fttest::config_root("seed = 3\n[optimizer]\n_component_ = \"torch.optim.AdamW\"\nlr = 0.5\n"));
  for (std::int64_t step = 1; step <= 4; ++step)
    logger->log_dict({{"loss", 2.0 / static_cast<double>(step)}, {"lr", 0.5}}, step);
  EXPECT_EQ(logger->close(0), std::nullopt);

  const auto files = wandb_files(dir);
  ASSERT_EQ(files.size(), 1u);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      files[0], m, std::regex(R"(/wandb/offline-run-\d{8}_\d{6}-([a-z0-9]{8})/run-([a-z0-9]{8})\.wandb$)")))
      << files[0];
  EXPECT_EQ(m[1], m[2]);
  const std::string run_id = m[1];
  EXPECT_TRUE(boost::filesystem::is_symlink(dir + "/wandb/latest-run"));

  const auto records = records_of(files[0]);
  ASSERT_EQ(records.size(), 2u + 4u + 3u);  // run, config, 4 history, summary, exit, final
  for (std::size_t i = 0; i < records.size(); ++i)
    EXPECT_EQ(records[i].int_field(kNum), static_cast<std::int64_t>(i + 1));

  const Message run = records[0].message_field(kRun);
  EXPECT_EQ(run.string_field(1), run_id);
  EXPECT_EQ(run.string_field(2), "team");
  EXPECT_EQ(run.string_field(3), "fthost-test");
  EXPECT_EQ(run.string_field(6), "sweep");
  EXPECT_EQ(run.string_field(8), "first");
  const double start = static_cast<double>(run.message_field(17).int_field(1));
  EXPECT_GT(start, 1.5e9);
  auto config = items_of(run.message_field(4), 1);
  EXPECT_EQ(config.at("seed"), 3);
  EXPECT_EQ(config.at("optimizer"), nlohmann::json::parse(R"({"_component_": "torch.optim.AdamW", "lr": 0.5})"));
  EXPECT_EQ(items_of(records[1].message_field(kConfig), 1), config);

  for (std::int64_t step = 1; step <= 4; ++step) {
    const Message history = records[static_cast<std::size_t>(step + 1)].message_field(kHistory);
    EXPECT_EQ(history.message_field(2).int_field(1), step);
    const auto items = items_of(history, 1);
    EXPECT_EQ(items.at("loss").get<double>(), 2.0 / static_cast<double>(step));
    EXPECT_EQ(items.at("lr").get<double>(), 0.5);
    EXPECT_EQ(items.at("_step").get<std::int64_t>(), step);
    EXPECT_GE(items.at("_runtime").get<double>(), 0.0);
    EXPECT_GE(items.at("_timestamp").get<double>(), start);
    EXPECT_EQ(history.messages(1)[0].string_field(1), "loss") << "items keep the logged order";
  }
  const auto summary = items_of(records[6].message_field(kSummary), 1);
  EXPECT_EQ(summary.at("loss").get<double>(), 0.5);
  EXPECT_EQ(summary.at("_step").get<std::int64_t>(), 4);
  const Message exit = records[7].message_field(kExit);
  EXPECT_EQ(exit.int_field(1), 0) << "success";
  EXPECT_TRUE(records[8].has(kFinal));
}

TEST(WandBLogger, FailedRunRecordsItsExitCode) {
  const std::string dir = fttest::temp_dir() + "/logs";
  auto logger = fttest::make_logger(wandb_table(dir));
  logger->log_dict({{"loss", 1.0}}, 1);
  EXPECT_EQ(logger->close(3), std::nullopt);
  const auto records = records_of(wandb_files(dir).at(0));
  ASSERT_EQ(records.size(), 5u);  // run (written before the first history), history, summary, exit, final
  EXPECT_TRUE(records[0].has(kRun));
  EXPECT_EQ(records[3].message_field(kExit).int_field(1), 3);
}

// close() is the host's word on how the run ended; a logger destroyed without it saw no clean
// end, which wandb itself records as exit code 1 for a log without an exit record.
TEST(WandBLogger, ALoggerDestroyedWithoutCloseRecordsTheRunAsFailed) {
  const std::string dir = fttest::temp_dir() + "/logs";
  auto logger = fttest::make_logger(wandb_table(dir));
  logger->log_dict({{"loss", 1.0}}, 1);
  logger.reset();
  const auto records = records_of(wandb_files(dir).at(0));
  ASSERT_GE(records.size(), 2u);
  EXPECT_EQ(records.at(records.size() - 2).message_field(kExit).int_field(1), 1);
  EXPECT_TRUE(records.back().has(kFinal));
}

TEST(WandBLogger, LogStrategyPicksTheRanksThatWrite) {
  auto runs_written = [](const std::string& strategy, int rank, int local_rank) {
    const std::string dir = fttest::temp_dir() + "/logs";
    ft::MetricLogger::Args args;
    args.rank = rank;
    args.local_rank = local_rank;
    args.world_size = 4;
    auto logger = fttest::make_logger(wandb_table(dir, "log_strategy = \"" + strategy + "\"\n"), args);
    logger->log_dict({{"loss", 1.0}}, 1);
    EXPECT_EQ(logger->close(0), std::nullopt);
    return wandb_files(dir).size();
  };
  EXPECT_EQ(runs_written("main", 0, 0), 1u);
  EXPECT_EQ(runs_written("main", 2, 0), 0u);
  EXPECT_EQ(runs_written("node", 2, 0), 1u);
  EXPECT_EQ(runs_written("node", 3, 1), 0u);
  EXPECT_EQ(runs_written("all", 3, 1), 1u);
  const std::string err = fttest::error_of<ft::ConfigError>(
      [] { fttest::make_logger(wandb_table("/tmp/unused", "log_strategy = \"everyone\"\n")); });
  EXPECT_NE(err.find("metric_logger.log_strategy"), std::string::npos) << err;
}

TEST(WandBLogger, OnlineModeIsAClearErrorThatSaysHowToSync) {
  const std::string err =
      fttest::error_of<ft::ConfigError>([] { fttest::make_logger(wandb_table("/tmp/wb", "mode = \"online\"\n")); });
  EXPECT_NE(err.find("metric_logger.mode"), std::string::npos) << err;
  EXPECT_NE(err.find("follow-up"), std::string::npos) << err;
  EXPECT_NE(err.find("wandb sync /tmp/wb/wandb/offline-run-*"), std::string::npos) << err;
  const std::string dir = fttest::temp_dir() + "/logs";
  auto disabled = fttest::make_logger(wandb_table(dir, "mode = \"disabled\"\n"));
  disabled->log_dict({{"loss", 1.0}}, 1);
  EXPECT_EQ(disabled->close(0), std::nullopt);
  EXPECT_TRUE(wandb_files(dir).empty());
}

}  // namespace
