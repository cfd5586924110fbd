#include "wandb_records.h"

#include "protobuf_writer.h"

#include <fmt/format.h>

#include <cmath>

namespace ft_loggers {

namespace {

// wandb_internal.Record
constexpr int kRecordNum = 1;
constexpr int kRecordHistory = 2;
constexpr int kRecordSummary = 3;
constexpr int kRecordConfig = 5;
constexpr int kRecordRun = 17;
constexpr int kRecordExit = 18;
constexpr int kRecordFinal = 20;
// RunRecord
constexpr int kRunId = 1;
constexpr int kRunEntity = 2;
constexpr int kRunProject = 3;
constexpr int kRunConfig = 4;
constexpr int kRunGroup = 6;
constexpr int kRunDisplayName = 8;
constexpr int kRunHost = 13;
constexpr int kRunStartTime = 17;
// google.protobuf.Timestamp
constexpr int kTimestampSeconds = 1;
constexpr int kTimestampNanos = 2;
// ConfigRecord / SummaryRecord .update, HistoryRecord .item; their items: key, value_json
constexpr int kUpdate = 1;
constexpr int kHistoryItem = 1;
constexpr int kHistoryStep = 2;
constexpr int kHistoryStepNum = 1;
constexpr int kItemKey = 1;
constexpr int kItemValueJson = 16;
// RunExitRecord
constexpr int kExitCode = 1;
constexpr int kExitRuntime = 2;

ProtoWriter items_message(int field, const JsonItems& items) {
  ProtoWriter m;
  for (const auto& [key, json] : items) {
    ProtoWriter item;
    item.bytes(kItemKey, key);
    item.bytes(kItemValueJson, json);
    m.message(field, item);
  }
  return m;
}

std::string record(std::int64_t num, int type_field, const ProtoWriter& body) {
  ProtoWriter r;
  r.int64(kRecordNum, num);
  r.message(type_field, body);  // written even when empty: the oneof must say which record this is
  return r.data();
}

}  // namespace

std::string json_number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return fmt::format("{}", value);
}

std::string wandb_run_record(std::int64_t num, const WandbRunInfo& run, const JsonItems& config) {
  ProtoWriter start;
  const double seconds = std::floor(run.start_time);
  start.int64(kTimestampSeconds, static_cast<std::int64_t>(seconds));
  start.int64(kTimestampNanos, static_cast<std::int64_t>((run.start_time - seconds) * 1e9));
  ProtoWriter r;
  r.bytes(kRunId, run.run_id);
  if (!run.entity.empty()) r.bytes(kRunEntity, run.entity);
  r.bytes(kRunProject, run.project);
  if (!config.empty()) r.message(kRunConfig, items_message(kUpdate, config));
  if (!run.group.empty()) r.bytes(kRunGroup, run.group);
  if (!run.display_name.empty()) r.bytes(kRunDisplayName, run.display_name);
  if (!run.host.empty()) r.bytes(kRunHost, run.host);
  r.message(kRunStartTime, start);
  return record(num, kRecordRun, r);
}

std::string wandb_config_record(std::int64_t num, const JsonItems& config) {
  return record(num, kRecordConfig, items_message(kUpdate, config));
}

std::string wandb_history_record(std::int64_t num, std::int64_t step, const JsonItems& items) {
  ProtoWriter history = items_message(kHistoryItem, items);
  ProtoWriter step_message;
  if (step != 0) step_message.int64(kHistoryStepNum, step);
  history.message(kHistoryStep, step_message);
  return record(num, kRecordHistory, history);
}

std::string wandb_summary_record(std::int64_t num, const JsonItems& items) {
  return record(num, kRecordSummary, items_message(kUpdate, items));
}

std::string wandb_exit_record(std::int64_t num, int exit_code, std::int32_t runtime_seconds) {
  ProtoWriter exit;
  if (exit_code != 0) exit.int64(kExitCode, exit_code);
  if (runtime_seconds != 0) exit.int64(kExitRuntime, runtime_seconds);
  return record(num, kRecordExit, exit);
}

std::string wandb_final_record(std::int64_t num) { return record(num, kRecordFinal, ProtoWriter{}); }

}  // namespace ft_loggers
