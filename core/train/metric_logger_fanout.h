// A `[[metric_logger]]` list: every logger receives every call, in the order configured, so
// one run can write TensorBoard, W&B and a JSONL file at once.
#pragma once

#include <ft/errors.h>
#include <ft/metric_logger.h>

#include <memory>
#include <string>
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

 protected:
  // Every logger is closed, whichever fail: one failed file must not cost the others their
  // last records. The failures come back together, one a line.
  void on_close(int exit_code) override {
    std::vector<std::string> failures;
    for (auto& l : loggers_)
      if (auto failure = l->close(exit_code)) failures.push_back(std::move(*failure));
    if (failures.empty()) return;
    if (failures.size() == 1) throw ft::Error(failures.front());
    std::string message =
        std::to_string(failures.size()) + " of " + std::to_string(loggers_.size()) + " metric loggers failed to close:";
    for (const auto& failure : failures) message += "\n  " + failure;
    throw ft::Error(message);
  }

 private:
  std::vector<std::shared_ptr<ft::MetricLogger>> loggers_;
};

}  // namespace fthost
