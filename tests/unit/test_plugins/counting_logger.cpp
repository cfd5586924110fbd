// A working plugin for loader and logger-failure tests: a metric logger that counts calls, a
// factory that throws, a logger that fails on command, and one that removes a directory at a
// given step (another logger's log_dir, vanishing mid-run at a step the test chooses).
#include <ft/errors.h>
#include <ft/metric_logger.h>
#include <ft/plugin.h>

#include <filesystem>
#include <string>

namespace {
class CountingLogger final : public ft::MetricLogger {
 public:
  explicit CountingLogger(std::int64_t start) : count_(start) {}
  void log(const std::string&, double, std::int64_t) override { ++count_; }
  void log_dict(const ft::Metrics& m, std::int64_t) override { count_ += static_cast<std::int64_t>(m.size()); }
  std::int64_t count() const { return count_; }

 private:
  std::int64_t count_;
};

// Throws ft::Error from log_dict at `fail_log_at_step` (0: never) and from close when
// `fail_close` is set; each message names the logger's `name` and, at close, the exit code.
class FailingLogger final : public ft::MetricLogger {
 public:
  FailingLogger(std::string name, std::int64_t fail_log_at_step, bool fail_close)
      : name_(std::move(name)), fail_log_at_step_(fail_log_at_step), fail_close_(fail_close) {}
  void log(const std::string&, double, std::int64_t step) override { maybe_fail(step); }
  void log_dict(const ft::Metrics&, std::int64_t step) override { maybe_fail(step); }

 protected:
  void on_close(int exit_code) override {
    if (fail_close_) throw ft::Error(name_ + ": close failed on purpose (exit code " + std::to_string(exit_code) + ")");
  }

 private:
  void maybe_fail(std::int64_t step) const {
    if (step == fail_log_at_step_) throw ft::Error(name_ + ": log failed on purpose at step " + std::to_string(step));
  }
  std::string name_;
  std::int64_t fail_log_at_step_;
  bool fail_close_;
};

class DirectoryRemovingLogger final : public ft::MetricLogger {
 public:
  DirectoryRemovingLogger(std::string path, std::int64_t at_step) : path_(std::move(path)), at_step_(at_step) {}
  void log(const std::string&, double, std::int64_t step) override { maybe_remove(step); }
  void log_dict(const ft::Metrics&, std::int64_t step) override { maybe_remove(step); }

 private:
  void maybe_remove(std::int64_t step) const {
    if (step == at_step_) std::filesystem::remove_all(path_);
  }
  std::string path_;
  std::int64_t at_step_;
};

void register_components(ft::Registry& reg) {
  ft::Schema s;
  s.optional("start", ft::ValueType::Int, "0", "initial count");
  reg.add<ft::MetricLogger>("acme.test.CountingLogger", s, "counts metrics",
                            [](const ft::ConfigNode& cfg, ft::MetricLogger::Args) {
                              return std::make_unique<CountingLogger>(cfg.get<std::int64_t>("start"));
                            });
  reg.add<ft::MetricLogger>("acme.test.ExplodingLogger", ft::Schema{}, "its factory throws",
                            [](const ft::ConfigNode&, ft::MetricLogger::Args) -> std::unique_ptr<ft::MetricLogger> {
                              throw std::runtime_error("disk on fire");
                            });
  ft::Schema failing;
  failing.optional("name", ft::ValueType::String, "\"FailingLogger\"", "the name its messages start with")
      .optional("fail_log_at_step", ft::ValueType::Int, "0", "the step whose log call throws (0: none)")
      .optional("fail_close", ft::ValueType::Bool, "false", "whether close fails");
  reg.add<ft::MetricLogger>("acme.test.FailingLogger", failing, "fails to log or to close, on purpose",
                            [](const ft::ConfigNode& cfg, ft::MetricLogger::Args) {
                              return std::make_unique<FailingLogger>(cfg.get<std::string>("name"),
                                                                     cfg.get<std::int64_t>("fail_log_at_step"),
                                                                     cfg.get<bool>("fail_close"));
                            });
  ft::Schema removing;
  removing.required("path", ft::ValueType::String, "the directory to remove")
      .required("at_step", ft::ValueType::Int, "the step whose log call removes it");
  reg.add<ft::MetricLogger>("acme.test.DirectoryRemovingLogger", removing, "removes a directory when a step is logged",
                            [](const ft::ConfigNode& cfg, ft::MetricLogger::Args) {
                              return std::make_unique<DirectoryRemovingLogger>(cfg.get<std::string>("path"),
                                                                               cfg.get<std::int64_t>("at_step"));
                            });
}
}  // namespace
FT_PLUGIN("counting_logger", "1.0", register_components)
