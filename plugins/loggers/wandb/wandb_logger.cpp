// Plugin ft_logger_wandb: torchtune.training.metric_logging.WandBLogger in W&B's offline mode.
//
// Writes the run as wandb itself does offline: <log_dir>/wandb/offline-run-<YYYYMMDD_HHMMSS>-<id>/
// run-<id>.wandb, a transaction log `wandb sync` uploads later. Records, in order: run (id,
// project, entity, group, name, host, config, start time), config, one history record per
// logged step, then summary, exit (the run's exit code) and final. A failure to write throws
// ft::Error naming the file from the log call that found it, or comes back from close().
// Online mode needs HTTP and an API key and is a follow-up.
#include "config_values.h"
#include "run_identity.h"
#include "wandb_records.h"
#include "wandb_transaction_log.h"

#include <ft/errors.h>
#include <ft/log.h>
#include <ft/metric_logger.h>
#include <ft/plugin.h>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include <cstdlib>
#include <ctime>
#include <exception>
#include <map>
#include <memory>
#include <random>

namespace {

using ft::ValueType;
using ft_loggers::host_name;
using ft_loggers::JsonItems;
using ft_loggers::unix_time;

// wandb's run ids: 8 characters of [a-z0-9].
std::string new_run_id() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device seed;
  std::mt19937_64 rng(seed());
  std::uniform_int_distribution<std::size_t> pick(0, sizeof kAlphabet - 2);
  std::string id;
  for (int i = 0; i < 8; ++i) id += kAlphabet[pick(rng)];
  return id;
}

std::string local_time_stamp(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm local{};
  ::localtime_r(&t, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%d_%H%M%S", &local);
  return text;
}

class WandBLogger final : public ft::MetricLogger {
 public:
  WandBLogger(const std::string& log_dir, ft_loggers::WandbRunInfo run) : run_(std::move(run)) {
    const boost::filesystem::path wandb_dir = boost::filesystem::path(log_dir) / "wandb";
    const std::string run_dir_name = fmt::format("offline-run-{}-{}", local_time_stamp(run_.start_time), run_.run_id);
    run_dir_ = (wandb_dir / run_dir_name).string();
    boost::filesystem::create_directories(run_dir_ + "/files");
    log_ = std::make_unique<ft_loggers::WandbTransactionLog>(run_dir_ + "/run-" + run_.run_id + ".wandb");
    point_latest_run_at(wandb_dir, run_dir_name);
    ft::log::info("WandBLogger: offline run {} in {}; upload it with: wandb sync {}", run_.run_id, run_dir_, run_dir_);
  }
  // A host that never closed the logger saw no clean end: the run is recorded as failed.
  ~WandBLogger() override {
    if (auto failure = close(1)) ft::log::error("{}", *failure);
  }

  void log_config(const ft::ConfigNode& root) override {
    check_open();
    const JsonItems config = ft_loggers::config_items_as_json(root);
    with_logger_name([&] {
      write_run_record(config);
      log_->append(ft_loggers::wandb_config_record(next_num(), config));
      log_->flush();
    });
  }

  void log(const std::string& name, double value, std::int64_t step) override { log_dict({{name, value}}, step); }

  // Each step is flushed, so a failure to write it (or a deleted file) surfaces at that step.
  void log_dict(const ft::Metrics& metrics, std::int64_t step) override {
    check_open();
    const double now = unix_time();
    JsonItems items;
    for (const auto& [name, value] : metrics) {
      items.emplace_back(name, ft_loggers::json_number(value));
      summary_[name] = items.back().second;
    }
    for (auto& item : step_items(step, now)) {
      summary_[item.first] = item.second;
      items.push_back(std::move(item));
    }
    with_logger_name([&] {
      write_run_record({});
      log_->append(ft_loggers::wandb_history_record(next_num(), step, items));
      log_->flush();
    });
  }

 protected:
  void on_close(int exit_code) override {
    if (!log_) return;
    auto log = std::move(log_);
    if (log->failed()) {  // the log call that failed has thrown it already
      log->abandon();
      return;
    }
    with_logger_name([&] {
      if (!run_written_) log->append(ft_loggers::wandb_run_record(next_num(), run_, {}));
      JsonItems summary;
      for (auto& [key, json] : summary_) summary.emplace_back(key, json);
      if (!summary.empty()) log->append(ft_loggers::wandb_summary_record(next_num(), summary));
      const auto runtime = static_cast<std::int32_t>(unix_time() - run_.start_time);
      log->append(ft_loggers::wandb_exit_record(next_num(), exit_code, runtime));
      log->append(ft_loggers::wandb_final_record(next_num()));
      log->close();
    });
    ft::log::info("WandBLogger: run {} {} (exit code {}); upload it with: wandb sync {}", run_.run_id,
                  exit_code == 0 ? "finished" : "failed", exit_code, run_dir_);
  }

 private:
  JsonItems step_items(std::int64_t step, double now) const {
    return {{"_step", std::to_string(step)},
            {"_runtime", ft_loggers::json_number(now - run_.start_time)},
            {"_timestamp", ft_loggers::json_number(now)}};
  }
  // wandb sync needs the run record before any other; the config goes into it when known.
  void write_run_record(const JsonItems& config) {
    if (run_written_) return;
    log_->append(ft_loggers::wandb_run_record(next_num(), run_, config));
    run_written_ = true;
  }
  void check_open() const {
    if (!log_) throw ft::Error("WandBLogger: logging after close()");
  }
  // Runs `write`, prefixing the logger's name to the message of a failure.
  template <class Write>
  static void with_logger_name(Write&& write) {
    try {
      write();
    } catch (const std::exception& e) {
      throw ft::Error(std::string("WandBLogger: ") + e.what());
    }
  }
  std::int64_t next_num() { return ++records_; }

  static void point_latest_run_at(const boost::filesystem::path& wandb_dir, const std::string& run_dir_name) {
    boost::system::error_code ec;
    const auto link = wandb_dir / "latest-run";
    boost::filesystem::remove(link, ec);
    boost::filesystem::create_directory_symlink(run_dir_name, link, ec);
  }

  ft_loggers::WandbRunInfo run_;
  std::string run_dir_;
  std::unique_ptr<ft_loggers::WandbTransactionLog> log_;
  std::map<std::string, std::string> summary_;  // key -> JSON of its last value
  std::int64_t records_ = 0;
  bool run_written_ = false;
};

bool writes_from_this_rank(const ft::ConfigNode& cfg, const ft::MetricLogger::Args& args) {
  const auto strategy = cfg.get<std::string>("log_strategy");
  if (strategy == "main") return args.rank == 0;
  if (strategy == "node") return args.local_rank == 0;
  if (strategy == "all") return true;
  cfg.fail("log_strategy",
           "expected \"main\" (rank 0), \"node\" (local rank 0 of each node) or \"all\", got \"" + strategy + "\"");
}

// The config's mode, else $WANDB_MODE as wandb reads it, else offline.
std::string wandb_mode(const ft::ConfigNode& cfg) {
  if (auto mode = cfg.get_optional<std::string>("mode")) return *mode;
  if (const char* env = std::getenv("WANDB_MODE"); env && *env) return env;
  return "offline";
}

std::unique_ptr<ft::MetricLogger> make_wandb_logger(const ft::ConfigNode& cfg, ft::MetricLogger::Args args) {
  const std::string mode = wandb_mode(cfg);
  const std::string log_dir = cfg.get<std::string>("log_dir");
  if (mode == "online")
    cfg.fail("mode",
             "online mode (HTTP to a W&B server) is not implemented yet; it is a follow-up. Run with "
             "mode = \"offline\" and upload the run afterwards with `wandb sync " +
                 (log_dir.empty() ? std::string(".") : log_dir) + "/wandb/offline-run-*` (docs/loggers.md)");
  if (mode != "offline" && mode != "disabled")
    cfg.fail("mode", "expected \"offline\", \"disabled\" or \"online\", got \"" + mode + "\"");
  if (!writes_from_this_rank(cfg, args) || mode == "disabled") return std::make_unique<ft::NoOpMetricLogger>();

  ft_loggers::WandbRunInfo run;
  run.run_id = new_run_id();
  run.project = cfg.get<std::string>("project");
  run.entity = cfg.get<std::string>("entity", "");
  run.group = cfg.get<std::string>("group", "");
  run.display_name = cfg.get<std::string>("name", "");
  if (args.world_size > 1 && cfg.get<std::string>("log_strategy") != "main")
    run.display_name += (run.display_name.empty() ? "" : "-") + fmt::format("rank{}", args.rank);
  run.host = host_name();
  run.start_time = unix_time();
  return std::make_unique<WandBLogger>(log_dir.empty() ? "." : log_dir, std::move(run));
}

void register_components(ft::Registry& reg) {
  ft::Schema s;
  s.optional("project", ValueType::String, "\"torchtune\"", "W&B project")
      .optional("entity", ValueType::String, "", "W&B entity (default: your default entity, at sync time)")
      .optional("group", ValueType::String, "", "W&B group of runs")
      .optional("name", ValueType::String, "", "display name of the run (default: chosen by W&B)")
      .optional("log_dir", ValueType::String, "\"\"",
                "directory that gets the wandb/ folder (default: the working directory)")
      .optional("mode", ValueType::String, "",
                "offline or disabled (default: $WANDB_MODE, else offline); online is a follow-up")
      .optional("log_strategy", ValueType::String, "\"main\"",
                "which ranks log: main (rank 0), node (local rank 0), all");
  reg.add<ft::MetricLogger>("torchtune.training.metric_logging.WandBLogger", s,
                            "Weights & Biases offline run (wandb sync uploads it)", make_wandb_logger);
}

}  // namespace

FT_PLUGIN("ft_logger_wandb", "0.1.0", register_components)
