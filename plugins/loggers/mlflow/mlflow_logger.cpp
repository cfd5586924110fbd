// Plugin ft_logger_mlflow: torchtune.training.metric_logging.MLFlowLogger.
//
// Rank 0 records the run where `tracking_uri` says (else $MLFLOW_TRACKING_URI): a directory or a
// file: URI is MLflow's file store, written directly (mlflow_file_store.h); http(s):// is a
// tracking server, through its REST API (mlflow_rest_store.h). `experiment_name` (else
// $MLFLOW_EXPERIMENT_NAME, else MLflow's default experiment) is created when absent. `run_id`
// (else $MLFLOW_RUN_ID) continues that run, as mlflow.start_run(run_id=...) does; otherwise a new
// run is made, named `run_name`. The run gets the tags mlflow.start_run gives (user, source,
// name), the effective config as params (torchtune's flatten_dict, str() of each value) and as
// the artifact config.effective.toml, one metric per logged value, and at close its status:
// FINISHED, KILLED (preempted, exit 75) or FAILED.
//
// A server that cannot be reached at start fails the run there, naming the URI. One lost later
// costs one warning: what cannot be sent is kept in memory and appended to
// <output_dir>/mlflow_unsent_<run id>.jsonl (each line a runs/log-batch request body), sent when
// the server answers again (tried at most every 30 s), and left in that file if it never does.
#include "mlflow_file_store.h"
#include "mlflow_rest_store.h"

#include "config_values.h"
#include "http_client.h"
#include "run_identity.h"

#include <ft/errors.h>
#include <ft/log.h>
#include <ft/metric_logger.h>
#include <ft/plugin.h>

#include <fmt/format.h>
#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include <pwd.h>
#include <sysexits.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <fstream>
#include <memory>

namespace {

using ft::ValueType;
using ft_mlflow::KeyValue;
using ft_mlflow::Metric;
using Json = nlohmann::json;

constexpr std::chrono::seconds kRetryInterval{30};

// getpass.getuser(), which mlflow records as the run's user.
std::string user_name() {
  for (const char* name : {"LOGNAME", "USER", "LNAME", "USERNAME"})
    if (std::string value = ft_loggers::environment_variable(name); !value.empty()) return value;
  if (const passwd* entry = ::getpwuid(::geteuid())) return entry->pw_name;
  return "unknown";
}

std::string default_run_name() {
  const std::time_t t = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&t, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%d-%H%M%S", &local);
  return std::string("fthost-") + text;
}

// One log-batch request: what the spool file holds a line of.
struct Batch {
  std::vector<Metric> metrics;
  std::vector<KeyValue> params;
  std::vector<KeyValue> tags;
};

Json batch_json(const std::string& run_id, const Batch& batch) {
  Json metrics = Json::array(), params = Json::array(), tags = Json::array();
  for (const auto& m : batch.metrics) {
    Json value = m.value;
    if (!std::isfinite(m.value)) value = std::isnan(m.value) ? "NaN" : m.value > 0 ? "Infinity" : "-Infinity";
    metrics.push_back({{"key", m.key}, {"value", value}, {"timestamp", m.timestamp_ms}, {"step", m.step}});
  }
  for (const auto& [k, v] : batch.params) params.push_back({{"key", k}, {"value", v}});
  for (const auto& [k, v] : batch.tags) tags.push_back({{"key", k}, {"value", v}});
  return {{"run_id", run_id}, {"metrics", metrics}, {"params", params}, {"tags", tags}};
}

class MLFlowLogger final : public ft::MetricLogger {
 public:
  MLFlowLogger(std::unique_ptr<ft_mlflow::Store> store, std::string run_id)
      : store_(std::move(store)), run_id_(std::move(run_id)) {}
  ~MLFlowLogger() override {
    if (auto failure = close(1)) ft::log::error("{}", *failure);
  }

  void log_config(const ft::ConfigNode& root) override {
    output_dir_ = root.get<std::string>("output_dir", ".");
    std::vector<KeyValue> params;
    for (auto& [key, value] : ft_loggers::config_leaves_as_python_str(root)) {
      if (value.size() > ft_mlflow::kMaxParamValueLength)
        throw ft::Error(
            fmt::format("MLFlowLogger: the config's {} is {} characters long when logged as an MLflow "
                        "param, over MLflow's limit of {}",
                        key, value.size(), ft_mlflow::kMaxParamValueLength));
      params.emplace_back(std::move(key), std::move(value));
    }
    for (std::size_t at = 0; at < params.size(); at += ft_mlflow::kMaxParamsOrTagsPerBatch) {
      Batch batch;
      const auto end = std::min(params.size(), at + ft_mlflow::kMaxParamsOrTagsPerBatch);
      batch.params.assign(params.begin() + static_cast<std::ptrdiff_t>(at),
                          params.begin() + static_cast<std::ptrdiff_t>(end));
      deliver(std::move(batch));
    }
    // torchtune logs the saved config file under its directory's path, without the leading '/'.
    std::string artifact_dir = output_dir_;
    while (!artifact_dir.empty() && artifact_dir.front() == '/') artifact_dir.erase(0, 1);
    const std::string artifact = (artifact_dir.empty() ? "" : artifact_dir + "/") + "config.effective.toml";
    try {
      store_->log_artifact(run_id_, artifact, root.to_toml());
    } catch (const ft_mlflow::ServerUnavailable& e) {
      ft::log::warn("{}; the config artifact {} is not stored (its params are)", e.what(), artifact);
    } catch (const ft::Error& e) {
      ft::log::warn("MLFlowLogger: the config artifact {} is not stored (its params are): {}", artifact, e.what());
    }
  }

  void log(const std::string& name, double value, std::int64_t step) override { log_dict({{name, value}}, step); }

  void log_dict(const ft::Metrics& metrics, std::int64_t step) override {
    const std::int64_t now = ft_loggers::unix_time_ms();
    Batch batch;
    for (const auto& [name, value] : metrics) batch.metrics.push_back({name, value, now, step});
    deliver(std::move(batch));
  }

 protected:
  void on_close(int exit_code) override {
    if (!store_) return;
    const ft_mlflow::RunStatus status = exit_code == 0             ? ft_mlflow::RunStatus::Finished
                                        : exit_code == EX_TEMPFAIL ? ft_mlflow::RunStatus::Killed
                                                                   : ft_mlflow::RunStatus::Failed;
    send_pending(/*force=*/true);
    if (!pending_.empty()) {
      ft::log::warn(
          "MLFlowLogger: {} logging calls never reached {}; they are in {} (each line a runs/log-batch "
          "request body; docs/loggers.md#mlflow says how to send them), and the run stays RUNNING there",
          pending_.size(), store_->describe(), spool_path());
      return;
    }
    try {
      store_->end_run(run_id_, status, ft_loggers::unix_time_ms());
    } catch (const ft_mlflow::ServerUnavailable& e) {
      ft::log::warn("{}; run {} stays RUNNING there (every metric was sent)", e.what(), run_id_);
      return;
    }
    ft::log::info("MLFlowLogger: run {} {} in {}", run_id_, ft_mlflow::run_status_name(status), store_->describe());
  }

 private:
  // Sends `batch` after whatever is waiting; keeps it, on disk too, while the server is away.
  void deliver(Batch batch) {
    send_pending(/*force=*/false);
    if (pending_.empty()) {
      try {
        store_->log_batch(run_id_, batch.metrics, batch.params, batch.tags);
        return;
      } catch (const ft_mlflow::ServerUnavailable& e) {
        last_attempt_ = std::chrono::steady_clock::now();
        ft::log::warn(
            "{}. The run goes on; what it logs is kept in {} and sent when the server answers again "
            "(tried every {} s; this warning is not repeated)",
            e.what(), spool_path(), kRetryInterval.count());
      }
    }
    spool(batch);
    pending_.push_back(std::move(batch));
  }

  void send_pending(bool force) {
    if (pending_.empty()) return;
    const auto now = std::chrono::steady_clock::now();
    if (!force && now - last_attempt_ < kRetryInterval) return;
    last_attempt_ = now;
    try {
      while (!pending_.empty()) {
        const Batch& batch = pending_.front();
        store_->log_batch(run_id_, batch.metrics, batch.params, batch.tags);
        pending_.pop_front();
      }
    } catch (const ft_mlflow::ServerUnavailable&) {
      return;  // still away: warned once already
    }
    ft::log::info("MLFlowLogger: {} answers again; everything kept while it was away is sent", store_->describe());
    boost::system::error_code ignored;
    boost::filesystem::remove(spool_path(), ignored);
  }

  void spool(const Batch& batch) {
    const std::string path = spool_path();
    std::ofstream out(path, std::ios::app);
    out << batch_json(run_id_, batch).dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
    out.flush();
    if (!out) throw ft::Error("MLFlowLogger: cannot keep the metrics the server did not take in " + path);
  }

  std::string spool_path() const {
    return (boost::filesystem::path(output_dir_) / ("mlflow_unsent_" + run_id_ + ".jsonl")).string();
  }

  std::unique_ptr<ft_mlflow::Store> store_;
  std::string run_id_;
  std::string output_dir_ = ".";
  std::deque<Batch> pending_;
  std::chrono::steady_clock::time_point last_attempt_{};
};

// MLflow's default tracking URI: ./mlruns when it holds runs, else sqlite:///mlflow.db.
std::string default_tracking_uri(const ft::ConfigNode& cfg) {
  boost::system::error_code ec;
  if (boost::filesystem::is_directory("mlruns", ec))
    for (const auto& entry : boost::filesystem::directory_iterator("mlruns", ec))
      if (boost::filesystem::exists(entry.path() / "meta.yaml")) return "mlruns";
  cfg.fail("tracking_uri",
           "is not set, nor is $MLFLOW_TRACKING_URI, and MLflow's default here is sqlite:///mlflow.db, a database "
           "fthost does not write. Give a directory or file: URI (MLflow's file store), or the http(s):// URI of an "
           "MLflow server (which can keep the database: mlflow server --backend-store-uri sqlite:///mlflow.db)");
}

std::unique_ptr<ft_mlflow::Store> open_store(const ft::ConfigNode& cfg, const std::string& uri) {
  const auto scheme_end = uri.find("://");
  const std::string scheme = scheme_end == std::string::npos ? "" : uri.substr(0, scheme_end);
  if (scheme == "http" || scheme == "https") {
    if (!ft_loggers::http_available())
      cfg.fail("tracking_uri", uri +
                                   ": this fthost was built without libcurl (FTHOST_WITH_CURL=OFF), so it "
                                   "writes file stores only");
    return ft_mlflow::open_rest_store(uri);
  }
  if (uri.rfind("file:", 0) == 0) {
    std::string path = uri.substr(5);
    if (path.rfind("//", 0) == 0) {  // file://HOST/path: only the local host
      path.erase(0, 2);
      const auto slash = path.find('/');
      const std::string host = path.substr(0, slash);
      if (!host.empty() && host != "localhost")
        cfg.fail("tracking_uri", uri + ": a file: URI on another host (" + host + ")");
      path = slash == std::string::npos ? "/" : path.substr(slash);
    }
    return ft_mlflow::open_file_store(path);
  }
  if (!scheme.empty() || uri.find(':') != std::string::npos)
    cfg.fail("tracking_uri", uri +
                                 ": fthost writes MLflow's file store (a directory or file: URI) and talks to "
                                 "servers over http(s)://; for a database backend (sqlite:, postgresql:, mysql:) "
                                 "start `mlflow server --backend-store-uri " +
                                 uri + "` and give its http:// URI");
  return ft_mlflow::open_file_store(uri);
}

std::unique_ptr<ft::MetricLogger> make_mlflow_logger(const ft::ConfigNode& cfg, ft::MetricLogger::Args args) {
  if (args.rank != 0) return std::make_unique<ft::NoOpMetricLogger>();  // torchtune: rank 0 only
  const std::string uri = cfg.get<std::string>("tracking_uri", ft_loggers::environment_variable("MLFLOW_TRACKING_URI"));
  const std::string tracking_uri = uri.empty() ? default_tracking_uri(cfg) : uri;
  const std::string experiment_name =
      cfg.get<std::string>("experiment_name", ft_loggers::environment_variable("MLFLOW_EXPERIMENT_NAME"));
  std::string run_id = cfg.get<std::string>("run_id", ft_loggers::environment_variable("MLFLOW_RUN_ID"));
  auto store = open_store(cfg, tracking_uri);
  try {
    if (!run_id.empty()) {
      store->resume_run(run_id);
      ft::log::info("MLFlowLogger: continuing run {} in {}", run_id, store->describe());
    } else {
      const std::string experiment = store->experiment_id(experiment_name);
      const std::string run_name = cfg.get<std::string>("run_name", "");
      const std::string name = run_name.empty() ? default_run_name() : run_name;
      const std::string user = user_name();
      run_id = store->create_run(experiment, name, user, ft_loggers::unix_time_ms(),
                                 {{"mlflow.user", user},
                                  {"mlflow.source.name", "fthost"},
                                  {"mlflow.source.type", "LOCAL"},
                                  {"mlflow.runName", name}});
      ft::log::info("MLFlowLogger: run {} ({}) of experiment {} in {}", run_id, name, experiment, store->describe());
    }
  } catch (const ft_mlflow::ServerUnavailable& e) {
    cfg.fail("tracking_uri", e.what());
  }
  return std::make_unique<MLFlowLogger>(std::move(store), std::move(run_id));
}

void register_components(ft::Registry& reg) {
  ft::Schema s;
  s.optional("experiment_name", ValueType::String, "",
             "MLflow experiment, created when absent (default: $MLFLOW_EXPERIMENT_NAME, else MLflow's default)")
      .optional("tracking_uri", ValueType::String, "",
                "a directory or file: URI (MLflow's file store) or an http(s):// MLflow server "
                "(default: $MLFLOW_TRACKING_URI, else ./mlruns when it holds runs)")
      .optional("run_id", ValueType::String, "",
                "an existing run to continue (default: $MLFLOW_RUN_ID, else a new run)")
      .optional("run_name", ValueType::String, "", "name of a new run (default: fthost-<date>-<time>)");
  reg.add<ft::MetricLogger>("torchtune.training.metric_logging.MLFlowLogger", s,
                            "MLflow run: a file store or a tracking server (REST)", make_mlflow_logger);
}

}  // namespace

FT_PLUGIN("ft_logger_mlflow", "0.1.0", register_components)
