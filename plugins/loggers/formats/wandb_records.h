// Serialized wandb_internal.Record messages (wandb/proto/wandb_internal.proto), the entries of a
// `.wandb` transaction log. `num` is the record's 1-based sequence number, as wandb-core's
// writer assigns it. Values are JSON text (value_json), as wandb stores every item.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ft_loggers {

// (key, JSON text) pairs: config, history and summary items.
using JsonItems = std::vector<std::pair<std::string, std::string>>;

// A metric value as wandb's JSON writes it: NaN and +-Infinity as bare tokens.
std::string json_number(double value);

struct WandbRunInfo {
  std::string run_id;
  std::string entity;  // empty: the user's default entity, chosen at sync time
  std::string project;
  std::string group;
  std::string display_name;
  std::string host;
  double start_time = 0;  // unix seconds
};

// Record.run: the run's identity, its config and start time; the first record of a log.
std::string wandb_run_record(std::int64_t num, const WandbRunInfo& run, const JsonItems& config);
// Record.config: ConfigRecord.update items.
std::string wandb_config_record(std::int64_t num, const JsonItems& config);
// Record.history: one logged step (items include _step, _runtime, _timestamp) and step.num.
std::string wandb_history_record(std::int64_t num, std::int64_t step, const JsonItems& items);
// Record.summary: SummaryRecord.update items.
std::string wandb_summary_record(std::int64_t num, const JsonItems& items);
// Record.exit: exit_code (0: finished, otherwise failed) and runtime in seconds.
std::string wandb_exit_record(std::int64_t num, int exit_code, std::int32_t runtime_seconds);
// Record.final: the end of the log.
std::string wandb_final_record(std::int64_t num);

}  // namespace ft_loggers
