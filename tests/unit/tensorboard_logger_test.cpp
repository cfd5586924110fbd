// torchtune.training.metric_logging.TensorBoardLogger through the host's plugin loader, read
// back with the independent TFRecord and protobuf readers (field numbers from TensorFlow's
// event.proto, summary.proto, tensor.proto and TensorBoard's hparams plugin_data.proto).
#include "logger_test_support.h"
#include "wire_decoder.h"

#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <thread>

namespace {

using fttest::Message;

const char* kRunConfig = R"(seed = 7
[optimizer]
_component_ = "torch.optim.AdamW"
lr = 2e-5
betas = [0.9, 0.95]
fused = true
)";

struct Scalar {
  std::int64_t step;
  std::string tag;
  float value;
};

struct EventFile {
  std::string path;
  std::vector<Message> events;
};

EventFile only_event_file(const std::string& dir) {
  const auto files = fttest::files_under(dir);
  EXPECT_EQ(files.size(), 1u) << dir;
  if (files.empty()) return {};
  std::vector<Message> events;
  for (const auto& record : fttest::read_tfrecords(fttest::read_file(files[0]))) events.emplace_back(record);
  return {files[0], std::move(events)};
}

// Event.summary.value[0], which every summary event of this logger has exactly one of.
Message value_of(const Message& event) {
  const auto values = event.message_field(5).messages(1);
  EXPECT_EQ(values.size(), 1u);
  return values.at(0);
}

std::string plugin_of(const Message& value) { return value.message_field(9).message_field(1).string_field(1); }

std::vector<Scalar> scalars_in(const std::vector<Message>& events) {
  std::vector<Scalar> out;
  for (const auto& e : events) {
    if (!e.has(5)) continue;
    const Message v = value_of(e);
    if (plugin_of(v) != "scalars") continue;
    const Message tensor = v.message_field(8);
    EXPECT_EQ(tensor.int_field(1), 1) << "DT_FLOAT";
    EXPECT_FALSE(tensor.has(2)) << "rank 0: no shape";
    EXPECT_EQ(v.message_field(9).int_field(4), 1) << "DATA_CLASS_SCALAR";
    const auto floats = tensor.floats(5);
    EXPECT_EQ(floats.size(), 1u);
    out.push_back({e.int_field(2), v.string_field(1), floats.at(0)});
  }
  return out;
}

// HParamsPluginData from an "hparams" value's metadata.
Message hparams_data(const Message& value) { return Message(value.message_field(9).message_field(1).string_field(2)); }

TEST(TensorBoardLogger, WritesEveryStepConfigAndHParams) {
  const std::string dir = fttest::temp_dir() + "/tb";
  auto logger =
      fttest::make_logger("_component_ = \"torchtune.training.metric_logging.TensorBoardLogger\"\nlog_dir = \"" + dir +
                          "\"\norganize_logs = false\n");
  logger->log_config(fttest::config_root(kRunConfig));
  std::vector<Scalar> expected;
  for (std::int64_t step = 1; step <= 5; ++step) {
    const double loss = 4.0 / static_cast<double>(step), lr = 1e-5 * static_cast<double>(step);
    logger->log_dict({{"loss", loss}, {"lr", lr}}, step);
    expected.push_back({step, "loss", static_cast<float>(loss)});
    expected.push_back({step, "lr", static_cast<float>(lr)});
  }
  logger->log("grad_norm", 0.5, 6);
  expected.push_back({6, "grad_norm", 0.5f});
  EXPECT_EQ(logger->close(0), std::nullopt);

  const EventFile file = only_event_file(dir);
  EXPECT_TRUE(std::regex_match(boost::filesystem::path(file.path).filename().string(),
                               std::regex(R"(events\.out\.tfevents\.\d{10}\..+\.\d+\.\d+)")))
      << file.path;
  const auto& events = file.events;
  ASSERT_GE(events.size(), 5u);
  EXPECT_EQ(events[0].string_field(3), "brain.Event:2");
  for (const auto& e : events) EXPECT_GT(e.double_field(1), 1.5e9) << "wall_time is unix seconds";

  const auto scalars = scalars_in(events);
  ASSERT_EQ(scalars.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(scalars[i].step, expected[i].step) << i;
    EXPECT_EQ(scalars[i].tag, expected[i].tag) << i;
    EXPECT_EQ(scalars[i].value, expected[i].value) << i;
  }

  // The config as markdown text and its leaves as hyperparameters, then the session's end.
  const Message text = value_of(events[1]);
  EXPECT_EQ(text.string_field(1), "config/text_summary");
  EXPECT_EQ(plugin_of(text), "text");
  EXPECT_EQ(text.message_field(8).int_field(1), 7) << "DT_STRING";
  EXPECT_NE(text.message_field(8).string_field(8).find("_component_ = 'torch.optim.AdamW'"), std::string::npos)
      << text.message_field(8).string_field(8);

  const Message start = value_of(events[2]);
  EXPECT_EQ(start.string_field(1), "_hparams_/session_start_info");
  EXPECT_EQ(plugin_of(start), "hparams");
  std::map<std::string, Message> hparams;
  for (const auto& entry : hparams_data(start).message_field(3).messages(1))
    hparams.emplace(entry.string_field(1), entry.message_field(2));
  ASSERT_EQ(hparams.count("optimizer.lr"), 1u);
  EXPECT_EQ(hparams.at("optimizer.lr").double_field(2), 2e-5);  // number_value
  EXPECT_EQ(hparams.at("seed").double_field(2), 7.0);
  EXPECT_EQ(hparams.at("optimizer._component_").string_field(3), "torch.optim.AdamW");  // string_value
  EXPECT_EQ(hparams.at("optimizer.fused").varint_field(4), 1u);                         // bool_value
  EXPECT_EQ(hparams.at("optimizer.betas").string_field(3), "[0.9,0.95]");

  const Message end = value_of(events.back());
  EXPECT_EQ(end.string_field(1), "_hparams_/session_end_info");
  EXPECT_EQ(hparams_data(end).message_field(4).int_field(1), 1) << "STATUS_SUCCESS";
}

TEST(TensorBoardLogger, FailedRunEndsTheSessionAsFailure) {
  const std::string dir = fttest::temp_dir() + "/tb";
  auto logger = fttest::make_logger(
      "_component_ = \"torchtune.training.metric_logging.TensorBoardLogger\"\nlog_dir = \"" + dir + "\"\n");
  logger->log_config(fttest::config_root(kRunConfig));
  logger->log_dict({{"loss", 1.0}}, 1);
  EXPECT_EQ(logger->close(1), std::nullopt);
  const auto files = fttest::files_under(dir);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(std::regex_search(files[0], std::regex(R"(/run_0_\d+\.\d{6}/events\.out\.tfevents\.)"))) << files[0];
  const EventFile file = only_event_file(dir);
  EXPECT_EQ(hparams_data(value_of(file.events.back())).message_field(4).int_field(1), 2) << "STATUS_FAILURE";
}

TEST(TensorBoardLogger, FlushesOnATimerAndTheFileStaysReadable) {
  const std::string dir = fttest::temp_dir() + "/tb";
  auto logger =
      fttest::make_logger("_component_ = \"torchtune.training.metric_logging.TensorBoardLogger\"\nlog_dir = \"" + dir +
                          "\"\norganize_logs = false\nflush_secs = 0.05\n");
  for (std::int64_t step = 1; step <= 3; ++step) logger->log_dict({{"loss", 1.0 * step}}, step);
  std::vector<Scalar> seen;
  for (int attempt = 0; attempt < 100 && seen.size() < 3; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    seen = scalars_in(only_event_file(dir).events);  // throws if the file ends mid-record
  }
  EXPECT_EQ(seen.size(), 3u) << "the timer flushed while the logger is open";
  EXPECT_EQ(logger->close(0), std::nullopt);
}

TEST(TensorBoardLogger, OnlyRankZeroWritesAndKeysAreChecked) {
  const std::string dir = fttest::temp_dir() + "/tb";
  ft::MetricLogger::Args rank1;
  rank1.rank = 1;
  rank1.world_size = 2;
  auto logger = fttest::make_logger(
      "_component_ = \"torchtune.training.metric_logging.TensorBoardLogger\"\nlog_dir = \"" + dir + "\"\n", rank1);
  logger->log_dict({{"loss", 1.0}}, 1);
  EXPECT_EQ(logger->close(0), std::nullopt);
  EXPECT_TRUE(fttest::files_under(dir).empty());

  const std::string err = fttest::error_of<ft::ConfigError>([] {
    fttest::make_logger(
        "_component_ = \"torchtune.training.metric_logging.TensorBoardLogger\"\nlog_dir = \"/tmp\"\nflush_secs = 0\n");
  });
  EXPECT_NE(err.find("metric_logger.flush_secs"), std::string::npos) << err;
}

}  // namespace
