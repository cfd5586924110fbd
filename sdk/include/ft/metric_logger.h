// Metric logger interface (`torchtune.training.metric_logging.*`). Metrics keep the order the
// recipe logs them in, as torchtune's dict payloads do.
#pragma once

#include <ft/config.h>
#include <ft/kind.h>

#include <cstdint>
#include <exception>
#include <optional>
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
  // A failure to write (a full disk, a log file deleted under the run) throws ft::Error naming
  // the file: the run cannot go on without the metrics it was asked to keep.
  virtual void log(const std::string& name, double value, std::int64_t step) = 0;
  virtual void log_dict(const Metrics& metrics, std::int64_t step) = 0;
  // The effective run configuration, once at start.
  virtual void log_config(const ConfigNode& /*root*/) {}

  // Ends the logger at the end of a run, on success (exit_code 0) and on failure (non-zero;
  // TensorBoard and W&B record it): flushes what is buffered, writes closing records, releases
  // files. Never throws, since hosts close loggers while a failure unwinds too. A failure
  // comes back as a complete message naming the file, which the host must report (and, after
  // an otherwise successful run, fail the run with); std::nullopt means everything was
  // written. Only the first call closes; later ones do nothing and return std::nullopt.
  [[nodiscard]] std::optional<std::string> close(int exit_code) noexcept {
    if (closed_) return std::nullopt;
    closed_ = true;
    try {
      on_close(exit_code);
      return std::nullopt;
    } catch (const std::exception& e) {
      return std::string(e.what());
    } catch (...) {
      return std::string("a metric logger failed to close with an exception that is not a std::exception");
    }
  }

 protected:
  // The logger's part of close(), called at most once. Throws ft::Error naming the file on a
  // failure; whatever it throws, close() turns into its returned message. Release every file
  // before throwing: there is no second chance. A logger whose destructor must not leave
  // buffered records behind calls close() itself (a host that never closed it saw no clean
  // end, so a non-zero exit code is the honest one).
  virtual void on_close(int /*exit_code*/) {}

 private:
  bool closed_ = false;
};

// What a logger that writes from rank 0 only (torchtune's loggers) returns on the other ranks.
class NoOpMetricLogger final : public MetricLogger {
 public:
  void log(const std::string&, double, std::int64_t) override {}
  void log_dict(const Metrics&, std::int64_t) override {}
};

}  // namespace ft
