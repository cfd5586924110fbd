// When logging fails: the close contract (close never throws, reports what failed, closes once),
// the fanout closing every logger whatever fails, each shipped logger turning a lost file into
// an ft::Error naming it, and runs of the fthost binary whose loggers fail mid-run ending with
// that message and a non-zero exit code instead of an abort.
#include "logger_test_support.h"
#include "train/metric_logger_fanout.h"
#include "wire_decoder.h"

#include <ft/errors.h>
#include <ft/text.h>

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <thread>

namespace {

using fttest::Message;

// Records the exit code it was closed with and fails its close as told.
class ScriptedLogger final : public ft::MetricLogger {
 public:
  enum class CloseFailure { kNone, kFtError, kNotAnException };
  ScriptedLogger(std::string name, CloseFailure failure) : name_(std::move(name)), failure_(failure) {}
  void log(const std::string&, double, std::int64_t) override {}
  void log_dict(const ft::Metrics&, std::int64_t) override {}
  std::vector<int> closed_with;

 protected:
  void on_close(int exit_code) override {
    closed_with.push_back(exit_code);
    if (failure_ == CloseFailure::kFtError) throw ft::Error(name_ + ": cannot close /logs/" + name_ + ".txt");
    if (failure_ == CloseFailure::kNotAnException) throw 42;
  }

 private:
  std::string name_;
  CloseFailure failure_;
};

using CloseFailure = ScriptedLogger::CloseFailure;

TEST(MetricLoggerClose, ReturnsTheFailureInsteadOfThrowingAndClosesOnce) {
  ScriptedLogger failing("a", CloseFailure::kFtError);
  std::optional<std::string> failure;
  EXPECT_NO_THROW(failure = failing.close(3));
  EXPECT_EQ(failure, std::optional<std::string>("a: cannot close /logs/a.txt"));
  EXPECT_EQ(failing.close(0), std::nullopt) << "a second close does nothing";
  EXPECT_EQ(failing.closed_with, std::vector<int>{3});

  ScriptedLogger odd("b", CloseFailure::kNotAnException);
  const auto odd_failure = odd.close(1);
  ASSERT_TRUE(odd_failure.has_value());
  EXPECT_NE(odd_failure->find("not a std::exception"), std::string::npos) << *odd_failure;

  ScriptedLogger fine("c", CloseFailure::kNone);
  EXPECT_EQ(fine.close(0), std::nullopt);
  EXPECT_EQ(fine.closed_with, std::vector<int>{0});
}

TEST(MetricLoggerFanout, ClosesEveryLoggerWhenSomeFailAndReportsEveryFailure) {
  auto first = std::make_shared<ScriptedLogger>("first", CloseFailure::kNone);
  auto second = std::make_shared<ScriptedLogger>("second", CloseFailure::kFtError);
  auto third = std::make_shared<ScriptedLogger>("third", CloseFailure::kNotAnException);
  auto fourth = std::make_shared<ScriptedLogger>("fourth", CloseFailure::kFtError);
  fthost::MetricLoggerFanout fanout({first, second, third, fourth});
  const auto failure = fanout.close(1);
  for (const auto& logger : {first, second, third, fourth})
    EXPECT_EQ(logger->closed_with, std::vector<int>{1}) << "every logger is closed once, with the run's exit code";
  ASSERT_TRUE(failure.has_value());
  EXPECT_NE(failure->find("3 of 4 metric loggers failed to close"), std::string::npos) << *failure;
  EXPECT_NE(failure->find("\n  second: cannot close /logs/second.txt"), std::string::npos) << *failure;
  EXPECT_NE(failure->find("\n  fourth: cannot close /logs/fourth.txt"), std::string::npos) << *failure;
  EXPECT_NE(failure->find("not a std::exception"), std::string::npos) << *failure;
  EXPECT_EQ(failure->find("first"), std::string::npos) << *failure;
  EXPECT_EQ(fanout.close(0), std::nullopt);
}

TEST(MetricLoggerFanout, OneFailureComesBackAsItIs) {
  auto ok = std::make_shared<ScriptedLogger>("ok", CloseFailure::kNone);
  auto bad = std::make_shared<ScriptedLogger>("bad", CloseFailure::kFtError);
  fthost::MetricLoggerFanout fanout({bad, ok});
  EXPECT_EQ(fanout.close(0), std::optional<std::string>("bad: cannot close /logs/bad.txt"));
  EXPECT_EQ(ok->closed_with, std::vector<int>{0});
}

// The shipped loggers whose log directory is removed while they write: writing into a deleted
// file succeeds at the system level, so only a logger that checks notices.
struct LostDirectoryCase {
  std::string name;       // test name
  std::string table;      // the [metric_logger] table without log_dir
  std::string file_part;  // in the path of the file that is lost
};

std::ostream& operator<<(std::ostream& os, const LostDirectoryCase& c) { return os << c.name; }

const auto kLostDirectoryCases = ::testing::Values(
    LostDirectoryCase{"DiskLogger",
                      "_component_ = \"torchtune.training.metric_logging.DiskLogger\"\nfilename = \"m.jsonl\"\n",
                      "/logs/m.jsonl"},
    LostDirectoryCase{"TensorBoardLogger", "_component_ = \"torchtune.training.metric_logging.TensorBoardLogger\"\n",
                      "/events.out.tfevents."},
    LostDirectoryCase{"WandBLogger", "_component_ = \"torchtune.training.metric_logging.WandBLogger\"\n", ".wandb"});

std::string case_name(const ::testing::TestParamInfo<LostDirectoryCase>& param_info) { return param_info.param.name; }

class LoggerLosesItsDirectory : public ::testing::TestWithParam<LostDirectoryCase> {};

TEST_P(LoggerLosesItsDirectory, TheNextLogCallThrowsAnErrorNamingTheFile) {
  const LostDirectoryCase& c = GetParam();
  fttest::TempDir tmp;
  const std::string log_dir = tmp.file("logs");
  auto logger = fttest::make_logger(c.table + "log_dir = \"" + log_dir + "\"\n");
  logger->log_dict({{"loss", 2.0}}, 1);
  ASSERT_EQ(fttest::files_under(log_dir).size(), 1u);
  const std::string file = fttest::files_under(log_dir).at(0);
  EXPECT_NE(file.find(c.file_part), std::string::npos) << file;
  boost::filesystem::remove_all(log_dir);

  const std::string error = fttest::error_of<ft::Error>([&] { logger->log_dict({{"loss", 1.0}}, 2); });
  EXPECT_NE(error.find(c.name + ": cannot write " + file + ": the file was deleted"), std::string::npos) << error;
  const std::string again = fttest::error_of<ft::Error>([&] { logger->log("loss", 0.5, 3); });
  EXPECT_EQ(again, error) << "the failure sticks";
  EXPECT_EQ(logger->close(1), std::nullopt) << "the log call has reported the failure already";
}

INSTANTIATE_TEST_SUITE_P(Loggers, LoggerLosesItsDirectory, kLostDirectoryCases, case_name);

// TensorBoard writes on a timer; records the timer could not write are lost, and close says so.
TEST(TensorBoardLogger, CloseReportsRecordsItsTimerCouldNotWrite) {
  fttest::TempDir tmp;
  const std::string log_dir = tmp.file("tb");
  auto logger =
      fttest::make_logger("_component_ = \"torchtune.training.metric_logging.TensorBoardLogger\"\nlog_dir = \"" +
                          log_dir + "\"\norganize_logs = false\nflush_secs = 0.02\n");
  const std::string file = fttest::files_under(log_dir).at(0);
  logger->log_dict({{"loss", 2.0}}, 1);
  boost::filesystem::remove_all(log_dir);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the timer's flush meets the deleted file
  const auto failure = logger->close(0);
  ASSERT_TRUE(failure.has_value());
  EXPECT_NE(failure->find("TensorBoardLogger: cannot write " + file + ": the file was deleted"), std::string::npos)
      << *failure;
}

TEST(DiskLogger, AFullDiskFailsTheLogCallWithThePath) {
  auto logger = fttest::make_logger(
      "_component_ = \"torchtune.training.metric_logging.DiskLogger\"\nlog_dir = \"/dev\"\nfilename = \"full\"\n");
  const std::string error = fttest::error_of<ft::Error>([&] { logger->log_dict({{"loss", 1.0}}, 1); });
  EXPECT_NE(error.find("DiskLogger: cannot write /dev/full: No space left on device"), std::string::npos) << error;
  EXPECT_EQ(logger->close(1), std::nullopt) << "reported once, by the log call";
}

// Runs of the fthost binary with a [[metric_logger]] list in place of the demo's StdoutLogger.
const std::string kTestPlugins = std::string(FT_TEST_PLUGIN_ROOT) + "/counting_logger";

fttest::CommandResult run_demo_with_loggers(const std::string& dir, const std::string& logger_tables) {
  std::string toml = fttest::read_file(std::string(FT_SOURCE_DIR) + "/configs/tiny_demo.toml");
  const std::string demo_logger = "[metric_logger]\n_component_ = \"torchtune.training.metric_logging.StdoutLogger\"\n";
  const auto at = toml.find(demo_logger);
  EXPECT_NE(at, std::string::npos) << "configs/tiny_demo.toml changed its logger";
  if (at != std::string::npos) toml.replace(at, demo_logger.size(), logger_tables);
  return fttest::run_fthost("--plugin-dir " + kTestPlugins + " --config " + fttest::write_temp("run.toml", toml) +
                            " output_dir=" + dir + "/out dataset.source=" + FT_SOURCE_DIR +
                            "/configs/demo/sort_tokens.jsonl epochs=1 max_steps_per_epoch=4 log_every_n_steps=1");
}

// How the run ended, for a failure message: run_fthost reports a killed process as -1, and a
// shell that did not exec it reports 128 + the signal (134 for SIGABRT).
void expect_clean_failure(const fttest::CommandResult& r) {
  EXPECT_EQ(r.exit_code, 2) << "fthost's exit code for an ft::Error, not an abort (-1 or 134)\n" << r.output;
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
}

class RunLosesItsLogDirectory : public ::testing::TestWithParam<LostDirectoryCase> {};

// The log directory vanishes after step 2 is logged (a test logger later in the list removes
// it), so step 3's log call is the first to meet the deleted file.
TEST_P(RunLosesItsLogDirectory, EndsWithAnErrorNamingTheFile) {
  const LostDirectoryCase& c = GetParam();
  fttest::TempDir tmp;
  const std::string log_dir = tmp.file("logs");
  const auto r = run_demo_with_loggers(tmp.str(), "[[metric_logger]]\n" + c.table + "log_dir = \"" + log_dir +
                                                      "\"\n\n[[metric_logger]]\n"
                                                      "_component_ = \"acme.test.DirectoryRemovingLogger\"\n"
                                                      "path = \"" +
                                                      log_dir + "\"\nat_step = 2\n");
  expect_clean_failure(r);
  const std::string expected = "fthost: error: " + c.name + ": cannot write " + log_dir + "/";
  const auto at = r.output.find(expected);
  ASSERT_NE(at, std::string::npos) << r.output;
  const std::string message = r.output.substr(at, r.output.find('\n', at) - at);
  EXPECT_NE(message.find(c.file_part), std::string::npos) << message;
  EXPECT_NE(message.find("the file was deleted while the run was writing it"), std::string::npos) << message;
  EXPECT_EQ(r.output.find("done:"), std::string::npos) << "the run stops at the failed step\n" << r.output;
}

INSTANTIATE_TEST_SUITE_P(Loggers, RunLosesItsLogDirectory, kLostDirectoryCases, case_name);

// A log failure unwinds the run while another logger fails to close: both are reported, the
// logger after them still ends its run as failed, and the process exits instead of aborting.
TEST(RunWithFailingLoggers, ALogFailureAndACloseFailureAreBothReported) {
  fttest::TempDir tmp;
  const auto r =
      run_demo_with_loggers(tmp.str(),
                            "[[metric_logger]]\n_component_ = \"acme.test.FailingLogger\"\n"
                            "name = \"CloseFailer\"\nfail_close = true\n\n"
                            "[[metric_logger]]\n_component_ = \"acme.test.FailingLogger\"\n"
                            "name = \"LogFailer\"\nfail_log_at_step = 2\n\n"
                            "[[metric_logger]]\n_component_ = \"torchtune.training.metric_logging.WandBLogger\"\n"
                            "log_dir = \"" +
                                tmp.file("wb") + "\"\n");
  expect_clean_failure(r);
  EXPECT_NE(r.output.find("fthost: error: LogFailer: log failed on purpose at step 2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("CloseFailer: close failed on purpose (exit code 1)"), std::string::npos) << r.output;
  std::vector<std::string> logs;
  for (const auto& f : fttest::files_under(tmp.file("wb")))
    if (ft::ends_with(f, ".wandb")) logs.push_back(f);
  ASSERT_EQ(logs.size(), 1u);
  std::vector<Message> records;
  for (const auto& rec : fttest::read_wandb_log(fttest::read_file(logs[0]))) records.emplace_back(rec);
  ASSERT_GE(records.size(), 2u);
  EXPECT_TRUE(records.back().has(20)) << "final record";
  EXPECT_EQ(records[records.size() - 2].message_field(18).int_field(1), 1) << "exit code 1: the run failed";
}

// Training succeeded but a logger could not finish its files: the run does not report success.
TEST(RunWithFailingLoggers, ACloseFailureAfterASuccessfulRunFailsIt) {
  fttest::TempDir tmp;
  const auto r = run_demo_with_loggers(tmp.str(),
                                       "[[metric_logger]]\n_component_ = \"acme.test.FailingLogger\"\n"
                                       "name = \"CloseFailer\"\nfail_close = true\n");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("done:"), std::string::npos) << "training itself finished\n" << r.output;
  EXPECT_NE(r.output.find("CloseFailer: close failed on purpose (exit code 0)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
}

}  // namespace
