// Plugin ft_logger_disk: torchtune.training.metric_logging.DiskLogger. Writes
// `<log_dir>/log_<unix time>.txt` in torchtune's text format, or one JSON object a line with
// output_fmt = "jsonl". Each line is flushed so a killed run keeps every logged step, and a
// line that cannot be written fails its log call with ft::Error naming the file.
#include <ft/errors.h>
#include <ft/log.h>
#include <ft/metric_logger.h>
#include <ft/plugin.h>
#include <ft/text.h>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>

namespace {

using ft::ValueType;

std::string json_number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

class DiskLogger final : public ft::MetricLogger {
 public:
  DiskLogger(const std::string& path, bool jsonl) : path_(path), jsonl_(jsonl) {
    file_ = std::fopen(path.c_str(), "a");
    if (!file_) {
      const int err = errno;
      throw ft::Error("DiskLogger: cannot open " + path + ": " + ft::errno_text(err));
    }
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
    write(line);
  }

 protected:
  void on_close(int /*exit_code*/) override {
    if (!file_) return;
    std::FILE* file = file_;
    file_ = nullptr;
    // A failure a log call has thrown already is not reported twice.
    if (std::fclose(file) != 0 && !failed_) {
      const int err = errno;
      throw ft::Error("DiskLogger: cannot close " + path_ + ": " + ft::errno_text(err));
    }
  }

 private:
  // Each line is flushed, so the step that cannot be written (or whose file was deleted, which
  // writes would not notice) is the one that fails.
  void write(const std::string& line) {
    if (failed_) throw ft::Error(*failed_);
    if (!file_) throw ft::Error("DiskLogger: logging to " + path_ + " after close()");
    if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0) {
      const int err = errno;
      fail("cannot write " + path_ + ": " + ft::errno_text(err));
    }
    struct stat st {};
    if (::fstat(::fileno(file_), &st) != 0) {
      const int err = errno;
      fail("cannot check " + path_ + ": " + ft::errno_text(err));
    }
    if (st.st_nlink == 0)
      fail("cannot write " + path_ +
           ": the file was deleted while the run was writing it (was its directory removed?); what was logged after "
           "that is lost");
  }
  // Later steps would land after a partial line, so every later write fails the same way.
  [[noreturn]] void fail(const std::string& message) {
    failed_ = "DiskLogger: " + message;
    throw ft::Error(*failed_);
  }

  std::string path_;
  bool jsonl_;
  std::FILE* file_ = nullptr;
  std::optional<std::string> failed_;
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
