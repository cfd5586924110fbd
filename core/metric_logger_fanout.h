// A `[[metric_logger]]` list: every logger receives every call, in the order configured, so
// one run can write TensorBoard, W&B and a JSONL file at once.
#pragma once

#include <ft/metric_logger.h>

#include <memory>
#include <vector>

namespace fthost {

class MetricLoggerFanout final : public ft::MetricLogger {
 public:
  explicit MetricLoggerFanout(std::vector<std::shared_ptr<ft::MetricLogger>> loggers) : loggers_(std::move(loggers)) {}
  void log(const std::string& name, double value, std::int64_t step) override {
    for (auto& l : loggers_) l->log(name, value, step);
  }
  void log_dict(const ft::Metrics& metrics, std::int64_t step) override {
    for (auto& l : loggers_) l->log_dict(metrics, step);
  }
  void log_config(const ft::ConfigNode& root) override {
    for (auto& l : loggers_) l->log_config(root);
  }
  void close() override { close_with_exit_code(0); }
  // Every logger is closed even when one fails; the first failure is rethrown afterwards.
  void close_with_exit_code(int exit_code) override {
    std::exception_ptr first;
    for (auto& l : loggers_) {
      try {
        l->close_with_exit_code(exit_code);
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
  }

 private:
  std::vector<std::shared_ptr<ft::MetricLogger>> loggers_;
};

}  // namespace fthost
