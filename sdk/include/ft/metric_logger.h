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
  // Where this process sits in the job: loggers decide from it whether they write at all
  // (torchtune writes from rank 0 only; WandB's log_strategy can pick every node or rank).
  struct Args {
    int rank = 0;
    int local_rank = 0;
    int world_size = 1;
  };

  virtual ~MetricLogger() = default;
  virtual void log(const std::string& name, double value, std::int64_t step) = 0;
  virtual void log_dict(const Metrics& metrics, std::int64_t step) = 0;
  // The effective run configuration, once at start.
  virtual void log_config(const ConfigNode& /*root*/) {}
  // Flushes and releases files; called once at the end of a run (also on failure).
  virtual void close() {}
  // close() for a host that knows how the run ended: exit_code 0 on success, non-zero on
  // failure (WandB records it). Call one of the two, once. Loggers that ignore the outcome
  // need not override it.
  virtual void close_with_exit_code(int /*exit_code*/) { close(); }
};

// What a logger that writes from rank 0 only (torchtune's loggers) returns on the other ranks.
class NoOpMetricLogger final : public MetricLogger {
 public:
  void log(const std::string&, double, std::int64_t) override {}
  void log_dict(const Metrics&, std::int64_t) override {}
};

}  // namespace ft
