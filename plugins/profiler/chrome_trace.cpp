#include "chrome_trace.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <map>

namespace ft_profiler {

namespace {

using Json = nlohmann::ordered_json;

bool is_memory_record(const torch::autograd::profiler::KinetoEvent& e) { return e.name() == "[memory]"; }

}  // namespace

std::string chrome_trace_json(const std::vector<torch::autograd::profiler::KinetoEvent>& events, int rank) {
  const auto pid = static_cast<std::int64_t>(::getpid());
  Json trace_events = Json::array();
  trace_events.push_back(
      {{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", fmt::format("fthost rank {}", rank)}}}});
  // The trace format's times are microseconds; LibTorch's events report nanoseconds.
  for (const auto& e : events) {
    Json event = {{"name", e.name()},
                  {"pid", pid},
                  {"tid", static_cast<std::int64_t>(e.startThreadId())},
                  {"ts", static_cast<std::int64_t>(e.startNs() / 1000)}};
    Json args = Json::object();
    if (is_memory_record(e)) {
      event["ph"] = "i";
      event["s"] = "t";
      event["cat"] = "cpu_instant_event";
      args["Bytes"] = e.nBytes();
      args["Device Type"] = static_cast<int>(e.deviceType());
      args["Device Id"] = static_cast<int>(e.deviceIndex());
    } else {
      event["ph"] = "X";
      event["cat"] = "cpu_op";
      event["dur"] = static_cast<std::int64_t>(e.durationNs() / 1000);
      if (e.hasShapes()) {
        Json shapes = Json::array();
        for (const auto& s : e.shapes()) shapes.push_back(s);
        args["Input Dims"] = shapes;
      }
      if (e.hasTypes()) {
        Json types = Json::array();
        for (const auto& t : e.dtypes()) types.push_back(t);
        args["Input type"] = types;
      }
      if (e.sequenceNr() >= 0) args["Sequence number"] = e.sequenceNr();
      if (e.fwdThreadId() > 0) args["Fwd thread id"] = e.fwdThreadId();
      if (e.flops() > 0) args["flops"] = e.flops();
      if (e.hasStack() && !e.stack().empty()) {
        std::string stack;
        for (const auto& frame : e.stack()) stack += (stack.empty() ? "" : ";") + frame;
        args["Call stack"] = stack;
      }
    }
    if (!args.empty()) event["args"] = std::move(args);
    trace_events.push_back(std::move(event));
  }
  Json trace = {{"schemaVersion", 1}, {"displayTimeUnit", "ms"}, {"traceEvents", std::move(trace_events)}};
  return trace.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string operator_summary_table(const std::vector<torch::autograd::profiler::KinetoEvent>& events,
                                   std::size_t row_limit) {
  struct Totals {
    std::int64_t calls = 0;
    std::uint64_t total_us = 0;
    std::uint64_t flops = 0;  // with_flops: LibTorch's estimate (matmuls, convolutions)
  };
  std::map<std::string, Totals> by_name;
  for (const auto& e : events) {
    if (is_memory_record(e)) continue;
    auto& t = by_name[e.name()];
    ++t.calls;
    t.total_us += e.durationNs() / 1000;
    t.flops += e.flops();
  }
  const bool any_flops =
      std::any_of(by_name.begin(), by_name.end(), [](const auto& row) { return row.second.flops > 0; });
  std::vector<std::pair<std::string, Totals>> rows(by_name.begin(), by_name.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.total_us > b.second.total_us; });
  if (rows.size() > row_limit) rows.resize(row_limit);
  std::string out = fmt::format("{:<48} {:>10} {:>14} {:>12}{}\n", "Name", "# Calls", "CPU total (us)", "CPU avg (us)",
                                any_flops ? fmt::format(" {:>14}", "Total FLOPs") : "");
  for (const auto& [name, t] : rows)
    out += fmt::format("{:<48} {:>10} {:>14} {:>12.1f}{}\n", name.substr(0, 48), t.calls, t.total_us,
                       static_cast<double>(t.total_us) / static_cast<double>(t.calls),
                       any_flops ? fmt::format(" {:>14}", t.flops) : "");
  out += "Totals include the time of nested operators (a call's children are inside its time).\n";
  return out;
}

}  // namespace ft_profiler
