// A working plugin for loader tests: a metric logger that counts calls, and a factory that throws.
#include <ft/metric_logger.h>
#include <ft/plugin.h>

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
}
}  // namespace
FT_PLUGIN("counting_logger", "1.0", register_components)
