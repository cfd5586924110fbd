// Where an MLflow run is recorded: MLflow's file store (a directory, `file:` URIs) or a tracking
// server's REST API (`http(s)://`). The logger speaks to either through this interface, in the
// terms of MLflow's own client (mlflow.tracking.MlflowClient).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ft_mlflow {

using KeyValue = std::pair<std::string, std::string>;

struct Metric {
  std::string key;
  double value = 0;
  std::int64_t timestamp_ms = 0;
  std::int64_t step = 0;
};

// MLflow's RunStatus, with its numbers (the file store writes them).
enum class RunStatus { Running = 1, Finished = 3, Failed = 4, Killed = 5 };
inline const char* run_status_name(RunStatus status) {
  switch (status) {
    case RunStatus::Running: return "RUNNING";
    case RunStatus::Finished: return "FINISHED";
    case RunStatus::Failed: return "FAILED";
    case RunStatus::Killed: return "KILLED";
  }
  return "FAILED";
}

// MLflow's limits (mlflow/utils/validation.py): one log-batch call carries at most 1000 metrics
// and 100 params and 100 tags; a param value at most 6000 characters, a tag value 8000.
constexpr std::size_t kMaxMetricsPerBatch = 1000;
constexpr std::size_t kMaxParamsOrTagsPerBatch = 100;
constexpr std::size_t kMaxParamValueLength = 6000;

class Store {
 public:
  virtual ~Store() = default;
  // The id of the experiment called `name`, created when there is none; "" is MLflow's
  // default experiment ("0"). Throws ft::Error when the experiment exists but was deleted.
  virtual std::string experiment_id(const std::string& name) = 0;
  // Creates a running run; returns its id.
  virtual std::string create_run(const std::string& experiment_id, const std::string& run_name, const std::string& user,
                                 std::int64_t start_ms, const std::vector<KeyValue>& tags) = 0;
  // Marks the existing run `run_id` running again (mlflow.start_run(run_id=...)); throws
  // ft::Error when there is no such run.
  virtual void resume_run(const std::string& run_id) = 0;
  // At most the per-batch limits above. Params are immutable in MLflow: logging a different
  // value for a logged key throws ft::Error naming both.
  virtual void log_batch(const std::string& run_id, const std::vector<Metric>& metrics,
                         const std::vector<KeyValue>& params, const std::vector<KeyValue>& tags) = 0;
  // Writes `content` as the run's artifact `artifact_path` (relative, '/'-separated).
  virtual void log_artifact(const std::string& run_id, const std::string& artifact_path,
                            const std::string& content) = 0;
  virtual void end_run(const std::string& run_id, RunStatus status, std::int64_t end_ms) = 0;
  // "the file store at DIR" or "the MLflow server at URI": for messages.
  virtual std::string describe() const = 0;
};

}  // namespace ft_mlflow
