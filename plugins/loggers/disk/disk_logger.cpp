// Plugin ft_logger_disk: torchtune.training.metric_logging.DiskLogger. Writes
// `<log_dir>/log_<unix time>.txt` in torchtune's text format, or one JSON object a line with
// output_fmt = "jsonl". Each line is written whole, so a killed run keeps every logged step,
// and a line that cannot be written fails its log call with ft::Error naming the file.
#include "append_only_file.h"

#include <ft/errors.h>
#include <ft/log.h>
#include <ft/metric_logger.h>
#include <ft/plugin.h>
#include <ft/text.h>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>

namespace {

using ft::ValueType;

std::string json_number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

// The log file's errors, prefixed with the logger's name as every logger's are.
template <class Fn>
auto with_name(Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& e) {
    throw ft::Error(std::string("DiskLogger: ") + e.what());
  }
}

class DiskLogger final : public ft::MetricLogger {
 public:
  DiskLogger(const std::string& path, bool jsonl)
      : file_(
            with_name([&] { return ft_loggers::AppendOnlyFile(path, ft_loggers::AppendOnlyFile::IfExists::Append); })),
        jsonl_(jsonl) {
    ft::log::info("DiskLogger: writing {}", path);
  }
  ~DiskLogger() override {
    if (auto failure = close(1)) ft::log::error("{}", *failure);
  }

  void log(const std::string& name, double value, std::int64_t step) override { log_dict({{name, value}}, step); }

  void log_dict(const ft::Metrics& metrics, std::int64_t step) override {
    std::string line;
    if (jsonl_) {
      line = fmt::format("{{\"step\": {}", step);
      for (const auto& [name, value] : metrics) line += fmt::format(", \"{}\": {}", name, json_number(value));
      line += "}\n";
    } else {
      line = fmt::format("Step {} | ", step);
      for (const auto& [name, value] : metrics) line += fmt::format("{}:{} ", name, value);
      line += "\n";
    }
    // Each line is written whole, so the step that cannot be written (or whose file was
    // deleted, which the file checks after each write) is the one that fails.
    with_name([&] { file_.write(line); });
  }

 protected:
  void on_close(int /*exit_code*/) override {
    if (file_.failed()) return file_.abandon();  // a log call has reported the failure already
    with_name([&] { file_.close(); });
  }

 private:
  ft_loggers::AppendOnlyFile file_;
  bool jsonl_;
};

void register_components(ft::Registry& reg) {
  ft::Schema s;
  s.required("log_dir", ValueType::String, "directory for the log file")
      .optional("filename", ValueType::String, "", "file name (default log_<unix time>.txt or .jsonl)")
      .optional("output_fmt", ValueType::String, "\"txt\"", "txt (torchtune's format) or jsonl");
  reg.add<ft::MetricLogger>(
      "torchtune.training.metric_logging.DiskLogger", s, "metrics to a text or JSONL file",
      [](const ft::ConfigNode& cfg, ft::MetricLogger::Args args) -> std::unique_ptr<ft::MetricLogger> {
        const auto fmt_name = cfg.get<std::string>("output_fmt");
        if (fmt_name != "txt" && fmt_name != "jsonl")
          cfg.fail("output_fmt", "expected \"txt\" or \"jsonl\", got \"" + fmt_name + "\"");
        if (args.rank != 0) return std::make_unique<ft::NoOpMetricLogger>();
        const auto dir = cfg.get<std::string>("log_dir");
        boost::filesystem::create_directories(dir);
        auto name = cfg.get<std::string>("filename", fmt::format("log_{}.{}", std::time(nullptr), fmt_name));
        return std::make_unique<DiskLogger>(dir + "/" + name, fmt_name == "jsonl");
      });
}

}  // namespace

FT_PLUGIN("ft_logger_disk", "0.1.0", register_components)
