// Metric logger interface (`torchtune.training.metric_logging.*`). Metrics keep the order the
// recipe logs them in, as torchtune's dict payloads do.
#pragma once

#include <ft/config.h>
#include <ft/kind.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ft {

using Metrics = std::vector<std::pair<std::string, double>>;

class MetricLogger {
 public:
  static constexpr Kind kind = Kind::MetricLogger;
  struct Args {};

  virtual ~MetricLogger() = default;
  virtual void log(const std::string& name, double value, std::int64_t step) = 0;
  virtual void log_dict(const Metrics& metrics, std::int64_t step) = 0;
  // The effective run configuration, once at start.
  virtual void log_config(const ConfigNode& /*root*/) {}
  // Flushes and releases files; called once at the end of a run (also on failure).
  virtual void close() {}
};

}  // namespace ft
