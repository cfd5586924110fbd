// Plugin ft_logger_comet: torchtune.training.metric_logging.CometLogger, offline.
//
// Rank 0 writes the experiment as comet_ml's OfflineExperiment does (comet_offline_archive.h):
// the archive <offline_directory>/<experiment key>.zip, which `comet upload` sends to Comet.
// torchtune's keys keep their meaning: project, workspace, experiment_key (32 to 50 alphanumeric
// characters; a new key when unset), mode (the resume strategy: get_or_create, get, create),
// experiment_name, tags; api_key is read at upload, by `comet upload`. online = true (comet_ml's
// default, else $COMET_START_ONLINE) needs Comet's streaming protocol, which fthost does not
// speak: refused at start, before training, with the offline alternative. log_config logs the
// effective config as nested parameters (comet_ml flattens them with "|") and as the asset
// config.effective.toml; each logged value is a metric message.
#include "comet_offline_archive.h"

#include "config_values.h"
#include "run_identity.h"

#include <ft/errors.h>
#include <ft/log.h>
#include <ft/metric_logger.h>
#include <ft/plugin.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>

namespace {

using ft::ValueType;
using Json = nlohmann::ordered_json;

// comet_ml's JSON for a metric value: non-finite values as strings.
Json metric_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return value;
}

class CometLogger final : public ft::MetricLogger {
 public:
  CometLogger(const std::string& offline_directory, ft_comet::ExperimentInfo info, const std::string& name)
      : archive_(std::make_unique<ft_comet::OfflineArchive>(offline_directory, std::move(info))) {
    with_name([&] {
      archive_->add("log_other", Json{{"key", "offline_experiment"}, {"value", true}});
      if (!name.empty()) archive_->add("log_other", Json{{"key", "Name"}, {"value", name}});
    });
    ft::log::info("CometLogger: offline experiment in {}", archive_->staging_dir());
  }
  ~CometLogger() override {
    if (auto failure = close(1)) ft::log::error("{}", *failure);
  }

  void log_config(const ft::ConfigNode& root) override {
    auto leaves = ft_loggers::config_leaves_as_json(root, "|");
    std::sort(leaves.begin(), leaves.end());  // comet_ml logs a dict's parameters in key order
    const bool nested = std::any_of(leaves.begin(), leaves.end(),
                                    [](const auto& leaf) { return leaf.first.find('|') != std::string::npos; });
    const std::int64_t now = ft_loggers::unix_time_ms();
    with_name([&] {
      if (nested) archive_->add("log_other", Json{{"key", "hasNestedParams"}, {"value", true}});
      for (const auto& [key, json] : leaves) {
        Json value = Json::parse(json);
        const bool list = value.is_array();
        Json param{{"paramName", key}, {"paramValue", std::move(value)}, {"source", "manual"}, {"step", nullptr}};
        Json payload{{"local_timestamp", now}};
        payload[list ? "params" : "param"] = std::move(param);  // comet_ml's key for a list value
        archive_->add("parameter_msg", std::move(payload));
      }
      archive_->add_asset("config.effective.toml", root.to_toml() + "\n", 0);
    });
  }

  void log(const std::string& name, double value, std::int64_t step) override { log_dict({{name, value}}, step); }

  void log_dict(const ft::Metrics& metrics, std::int64_t step) override {
    const std::int64_t now = ft_loggers::unix_time_ms();
    with_name([&] {
      for (const auto& [name, value] : metrics)
        archive_->add(
            "metric_msg",
            Json{{"local_timestamp", now},
                 {"metric",
                  {{"epoch", nullptr}, {"metricName", name}, {"metricValue", metric_value(value)}, {"step", step}}}});
    });
  }

 protected:
  void on_close(int exit_code) override {
    if (!archive_) return;
    auto archive = std::move(archive_);
    const std::string path = with_name([&] { return archive->finish(ft_loggers::unix_time_ms()); });
    ft::log::info("CometLogger: offline experiment {} (exit code {}); upload it with: comet upload {}", path, exit_code,
                  path);
  }

 private:
  template <class Write>
  static auto with_name(Write&& write) -> decltype(write()) {
    try {
      return write();
    } catch (const std::exception& e) {
      throw ft::Error(std::string("CometLogger: ") + e.what());
    }
  }

  std::unique_ptr<ft_comet::OfflineArchive> archive_;
};

bool env_says_false(const std::string& value) {
  std::string lower = value;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower == "0" || lower == "false" || lower == "no" || lower == "off";
}

std::string new_experiment_key() {
  std::random_device seed;
  std::mt19937_64 rng((static_cast<std::uint64_t>(seed()) << 32) ^ seed());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string key;
  while (key.size() < 32) key += kHex[rng() % 16];
  return key;
}

std::unique_ptr<ft::MetricLogger> make_comet_logger(const ft::ConfigNode& cfg, ft::MetricLogger::Args args) {
  std::string online_env = ft_loggers::environment_variable("COMET_START_ONLINE");
  const bool online = cfg.get<bool>("online", online_env.empty() || !env_says_false(online_env));
  if (online)
    cfg.fail("online",
             "Comet's online mode streams to Comet's servers through comet_ml's own protocol, which fthost "
             "does not speak. Set online = false: the run is written as an offline experiment archive, "
             "which `comet upload <archive>` sends (with your api_key) after or during the run");
  const std::string mode = cfg.get<std::string>("mode", "get_or_create");
  if (mode != "get_or_create" && mode != "get" && mode != "create")
    cfg.fail("mode", "expected \"get_or_create\", \"get\" or \"create\", got \"" + mode + "\"");
  std::string key = cfg.get<std::string>("experiment_key", ft_loggers::environment_variable("COMET_EXPERIMENT_KEY"));
  const bool user_key = !key.empty();
  if (user_key) {
    const bool alphanumeric = std::all_of(key.begin(), key.end(), [](unsigned char c) { return std::isalnum(c); });
    if (key.size() < 32 || key.size() > 50 || !alphanumeric)
      cfg.fail("experiment_key", "\"" + key + "\" is not a Comet experiment key (32 to 50 alphanumeric characters)");
  } else if (mode == "get") {
    cfg.fail("mode", "\"get\" continues an existing experiment, named by experiment_key, which is not set");
  }
  if (args.rank != 0) return std::make_unique<ft::NoOpMetricLogger>();  // torchtune: rank 0 only
  // Keys whose meaning is comet_ml's and has nothing to act on in an offline native run: said
  // once, not ignored in silence.
  if (!cfg.get<std::string>("api_key", "").empty())
    ft::log::info(
        "CometLogger: api_key is for `comet upload`, which reads it from $COMET_API_KEY or ~/.comet.config; "
        "the offline run neither needs nor stores it");
  if (cfg.get<bool>("log_code", true))
    ft::log::info(
        "CometLogger: log_code: an fthost run has no Python script to log; the effective config is logged "
        "as the asset config.effective.toml");

  ft_comet::ExperimentInfo info;
  info.experiment_key = user_key ? key : new_experiment_key();
  info.user_provided_key = user_key;
  info.project = cfg.get<std::string>("project", ft_loggers::environment_variable("COMET_PROJECT_NAME"));
  info.workspace = cfg.get<std::string>("workspace", ft_loggers::environment_variable("COMET_WORKSPACE"));
  info.tags = cfg.get<std::vector<std::string>>("tags", {});
  info.resume_strategy = mode;
  info.start_time_ms = ft_loggers::unix_time_ms();
  std::string directory =
      cfg.get<std::string>("offline_directory", ft_loggers::environment_variable("COMET_OFFLINE_DIRECTORY"));
  if (directory.empty()) directory = ".cometml-runs";  // comet_ml's default
  return std::make_unique<CometLogger>(directory, std::move(info), cfg.get<std::string>("experiment_name", ""));
}

void register_components(ft::Registry& reg) {
  ft::Schema s;
  s.optional("api_key", ValueType::String, "",
             "Comet API key: used by `comet upload` when it sends the archive (the run itself is offline)")
      .optional("workspace", ValueType::String, "", "Comet workspace (default: $COMET_WORKSPACE, else yours)")
      .optional("project", ValueType::String, "", "Comet project (default: $COMET_PROJECT_NAME, else Uncategorized)")
      .optional("experiment_key", ValueType::String, "",
                "the experiment's key, 32 to 50 alphanumeric characters (default: $COMET_EXPERIMENT_KEY, else new)")
      .optional("mode", ValueType::String, "\"get_or_create\"",
                "on upload: get_or_create, get (append to experiment_key's) or create")
      .optional("online", ValueType::Bool, "",
                "must be false: the offline archive (default: $COMET_START_ONLINE, else comet_ml's true, refused)")
      .optional("experiment_name", ValueType::String, "", "name of the experiment")
      .optional("tags", ValueType::List, "[]", "tags of the experiment")
      .optional("log_code", ValueType::Bool, "true",
                "comet_ml logs the Python script's source; an fthost run has none (the config is logged instead)")
      .optional("offline_directory", ValueType::String, "",
                "where the archive is written (default: $COMET_OFFLINE_DIRECTORY, else .cometml-runs)");
  reg.add<ft::MetricLogger>("torchtune.training.metric_logging.CometLogger", s,
                            "Comet offline experiment archive (comet upload sends it)", make_comet_logger);
}

}  // namespace

FT_PLUGIN("ft_logger_comet", "0.1.0", register_components)
