// Plugin ft_logger_tensorboard: torchtune.training.metric_logging.TensorBoardLogger.
//
// Writes what PyTorch's SummaryWriter writes for torchtune (one event file per run, scalars as
// rank-0 float tensors of the "scalars" plugin) plus the run config as text and its leaves as
// HParams. Rank 0 only, as in torchtune. Records are flushed every flush_secs and on close. A
// write failure, found by the timer or by a log call, is thrown as ft::Error naming the event
// file by the next log call, or returned by close().
#include "config_values.h"
#include "periodic_flusher.h"
#include "run_identity.h"
#include "tensorboard_events.h"
#include "tfrecord_writer.h"

#include <ft/errors.h>
#include <ft/log.h>
#include <ft/metric_logger.h>
#include <ft/plugin.h>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace {

using ft::ValueType;
using ft_loggers::host_name;
using ft_loggers::unix_time;

// SummaryWriter's name: events.out.tfevents.<10-digit unix time>.<host>.<pid>.<n>.
std::string event_file_name() {
  static std::atomic<int> files_made{0};
  return fmt::format("events.out.tfevents.{:010d}.{}.{}.{}", static_cast<std::int64_t>(unix_time()), host_name(),
                     ::getpid(), files_made++);
}

// Markdown: a config as an indented code block keeps its layout in the Text tab.
std::string as_code_block(const std::string& text) {
  std::string out = "    ";
  for (char c : text) {
    out += c;
    if (c == '\n') out += "    ";
  }
  return out;
}

class TensorBoardLogger final : public ft::MetricLogger {
 public:
  TensorBoardLogger(const std::string& run_dir, double flush_secs) {
    boost::filesystem::create_directories(run_dir);
    writer_ = std::make_unique<ft_loggers::TFRecordWriter>(run_dir + "/" + event_file_name());
    writer_->append(ft_loggers::file_version_event(unix_time()));
    writer_->flush();
    ft::log::info("TensorBoardLogger: writing {}", writer_->path());
    flusher_ = std::make_unique<ft_loggers::PeriodicFlusher>(
        std::chrono::milliseconds(static_cast<std::int64_t>(flush_secs * 1000)), [this] { flush_in_background(); });
  }
  // A host that never closed the logger saw no clean end: the session ends as failed.
  ~TensorBoardLogger() override {
    if (auto failure = close(1)) ft::log::error("{}", *failure);
  }

  void log(const std::string& name, double value, std::int64_t step) override {
    std::lock_guard<std::mutex> lock(mutex_);
    check_writable();
    writer_->append(ft_loggers::scalar_event(unix_time(), step, name, static_cast<float>(value)));
  }

  void log_dict(const ft::Metrics& metrics, std::int64_t step) override {
    std::lock_guard<std::mutex> lock(mutex_);
    check_writable();
    const double now = unix_time();
    for (const auto& [name, value] : metrics)
      writer_->append(ft_loggers::scalar_event(now, step, name, static_cast<float>(value)));
  }

  void log_config(const ft::ConfigNode& root) override {
    std::lock_guard<std::mutex> lock(mutex_);
    check_writable();
    const double now = unix_time();
    writer_->append(ft_loggers::text_event(now, 0, "config", as_code_block(root.to_toml())));
    writer_->append(ft_loggers::hparams_session_start_event(now, ft_loggers::config_leaves_as_hparams(root)));
    session_started_ = true;
    with_logger_name([&] { writer_->flush(); });
  }

 protected:
  void on_close(int exit_code) override {
    if (flusher_) flusher_->stop();
    std::lock_guard<std::mutex> lock(mutex_);
    if (!writer_) return;
    auto writer = std::move(writer_);
    if (writer->failed()) {
      // A log call has already thrown this failure unless only the timer saw it.
      writer->abandon();
      if (unreported_failure_) throw ft::Error(*unreported_failure_);
      return;
    }
    with_logger_name([&] {
      if (session_started_) writer->append(ft_loggers::hparams_session_end_event(unix_time(), exit_code != 0));
      writer->close();
    });
  }

 private:
  // Buffered records reach the file only on a flush, mostly from the timer, so every log call
  // first checks what the timer found, and that the file is still there: a deleted event file
  // would otherwise swallow the rest of the run without a word.
  void check_writable() {
    if (!writer_) throw ft::Error("TensorBoardLogger: logging after close()");
    if (unreported_failure_) {
      const std::string failure = std::move(*unreported_failure_);
      unreported_failure_.reset();
      throw ft::Error(failure);
    }
    with_logger_name([&] { writer_->check_not_deleted(); });
  }

  void flush_in_background() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!writer_ || writer_->failed()) return;
    try {
      with_logger_name([&] { writer_->flush(); });
    } catch (const std::exception& e) {
      unreported_failure_ = e.what();
    }
  }

  // Runs `write`, prefixing the logger's name to the message of a failure.
  template <class Write>
  static void with_logger_name(Write&& write) {
    try {
      write();
    } catch (const std::exception& e) {
      throw ft::Error(std::string("TensorBoardLogger: ") + e.what());
    }
  }

  std::mutex mutex_;
  std::unique_ptr<ft_loggers::TFRecordWriter> writer_;
  std::unique_ptr<ft_loggers::PeriodicFlusher> flusher_;
  bool session_started_ = false;
  std::optional<std::string> unreported_failure_;  // a failed timer flush no log call has thrown yet
};

void register_components(ft::Registry& reg) {
  ft::Schema s;
  s.required("log_dir", ValueType::String, "TensorBoard log directory (tensorboard --logdir <log_dir>)")
      .optional("organize_logs", ValueType::Bool, "true", "write into a run_<rank>_<unix time> subdirectory per run")
      .optional("flush_secs", ValueType::Float, "10.0", "seconds between flushes of buffered records (fthost)");
  reg.add<ft::MetricLogger>(
      "torchtune.training.metric_logging.TensorBoardLogger", s, "TensorBoard event files (rank 0)",
      [](const ft::ConfigNode& cfg, ft::MetricLogger::Args args) -> std::unique_ptr<ft::MetricLogger> {
        const double flush_secs = cfg.get<double>("flush_secs");
        if (!(flush_secs > 0)) cfg.fail("flush_secs", "expected a positive number of seconds");
        std::string dir = cfg.get<std::string>("log_dir");
        if (dir.empty()) cfg.fail("log_dir", "expected a directory, got an empty string");
        if (args.rank != 0) return std::make_unique<ft::NoOpMetricLogger>();  // as torchtune's logger
        if (cfg.get<bool>("organize_logs")) dir += fmt::format("/run_{}_{:.6f}", args.rank, unix_time());
        return std::make_unique<TensorBoardLogger>(dir, flush_secs);
      });
}

}  // namespace

FT_PLUGIN("ft_logger_tensorboard", "0.1.0", register_components)
