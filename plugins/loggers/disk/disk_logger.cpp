// Plugin ft_logger_disk: torchtune.training.metric_logging.DiskLogger. Writes
// `<log_dir>/log_<unix time>.txt` in torchtune's text format, or one JSON object a line with
// output_fmt = "jsonl". Each line is flushed so a killed run keeps every logged step.
#include <ft/log.h>
#include <ft/metric_logger.h>
#include <ft/plugin.h>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace {

using ft::ValueType;

std::string json_number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

class DiskLogger final : public ft::MetricLogger {
 public:
  DiskLogger(const std::string& path, bool jsonl) : path_(path), jsonl_(jsonl) {
    file_ = std::fopen(path.c_str(), "a");
    if (!file_) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
    ft::log::info("DiskLogger: writing {}", path);
  }
  ~DiskLogger() override { close(); }

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
    write(line);
  }

  void close() override {
    if (file_) std::fclose(file_);
    file_ = nullptr;
  }

 private:
  void write(const std::string& line) {
    if (!file_) throw std::runtime_error("DiskLogger: " + path_ + " is closed");
    if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0)
      throw std::runtime_error("DiskLogger: write to " + path_ + " failed: " + std::strerror(errno));
  }
  std::string path_;
  bool jsonl_;
  std::FILE* file_ = nullptr;
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
