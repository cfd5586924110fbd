// A third-party metric logger: one CSV row per logged step, columns from the first row. A row
// that cannot be written fails its log call; a file that cannot be completed fails close().
#include <ft/errors.h>
#include <ft/metric_logger.h>
#include <ft/plugin.h>

#include <fstream>

namespace {

class CsvLogger final : public ft::MetricLogger {
 public:
  explicit CsvLogger(const std::string& path) : path_(path), out_(path) {
    if (!out_) throw ft::Error("cannot open " + path);
  }
  void log(const std::string& name, double value, std::int64_t step) override { log_dict({{name, value}}, step); }
  void log_dict(const ft::Metrics& metrics, std::int64_t step) override {
    if (!header_written_) {
      out_ << "step";
      for (const auto& m : metrics) out_ << "," << m.first;
      out_ << "\n";
      header_written_ = true;
    }
    out_ << step;
    for (const auto& m : metrics) out_ << "," << m.second;
    out_ << "\n" << std::flush;
    if (!out_) throw ft::Error("CsvLogger: cannot write " + path_);
  }

 protected:
  void on_close(int /*exit_code*/) override {
    out_.close();
    if (!out_) throw ft::Error("CsvLogger: cannot write " + path_);
  }

 private:
  std::string path_;
  std::ofstream out_;
  bool header_written_ = false;
};

void register_components(ft::Registry& reg) {
  ft::Schema s;
  s.required("path", ft::ValueType::String, "CSV file to write");
  reg.add<ft::MetricLogger>("acme.loggers.CsvLogger", s, "metrics as CSV",
                            [](const ft::ConfigNode& cfg, ft::MetricLogger::Args) {
                              return std::make_unique<CsvLogger>(cfg.get<std::string>("path"));
                            });
}

}  // namespace

FT_PLUGIN("acme_csv_logger", "1.2.0", register_components)
