// Plugin ft_logger_stdout: torchtune.training.metric_logging.StdoutLogger, same line format:
// `Step 3 | loss:2.0794 lr:2e-05 `.
#include <ft/errors.h>
#include <ft/metric_logger.h>
#include <ft/plugin.h>
#include <ft/text.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <string>

namespace {

class StdoutLogger final : public ft::MetricLogger {
 public:
  void log(const std::string& name, double value, std::int64_t step) override {
    write(fmt::format("Step {} | {}:{}\n", step, name, value));
  }
  void log_dict(const ft::Metrics& metrics, std::int64_t step) override {
    std::string line = fmt::format("Step {} | ", step);
    for (const auto& [name, value] : metrics) line += fmt::format("{}:{} ", name, value);
    line += "\n";
    write(line);
  }

 private:
  // Standard output redirected to a file on a full disk fails here, not silently.
  static void write(const std::string& line) {
    if (std::fputs(line.c_str(), stdout) < 0 || std::fflush(stdout) != 0) {
      const int err = errno;
      throw ft::Error("StdoutLogger: cannot write to standard output: " + ft::errno_text(err));
    }
  }
};

void register_components(ft::Registry& reg) {
  reg.add<ft::MetricLogger>(
      "torchtune.training.metric_logging.StdoutLogger", ft::Schema{}, "metrics to standard output",
      [](const ft::ConfigNode&, ft::MetricLogger::Args args) -> std::unique_ptr<ft::MetricLogger> {
        if (args.rank != 0) return std::make_unique<ft::NoOpMetricLogger>();
        return std::make_unique<StdoutLogger>();
      });
}

}  // namespace

FT_PLUGIN("ft_logger_stdout", "0.1.0", register_components)
