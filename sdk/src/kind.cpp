#include <ft/kind.h>

#include <array>
#include <utility>

namespace ft {
namespace {
constexpr std::array<std::pair<Kind, std::string_view>, 12> kNames{{
    {Kind::Model, "model"},
    {Kind::Loss, "loss"},
    {Kind::Optimizer, "optimizer"},
    {Kind::LRScheduler, "lr_scheduler"},
    {Kind::MetricLogger, "metric_logger"},
    {Kind::Parallelism, "parallelism"},
    {Kind::Tokenizer, "tokenizer"},
    {Kind::Dataset, "dataset"},
    {Kind::Collate, "collate"},
    {Kind::Checkpointer, "checkpointer"},
    {Kind::Profiler, "profiler"},
    {Kind::TensorParallelPlan, "tensor_parallel_plan"},
}};
}  // namespace

std::string_view kind_name(Kind kind) {
  for (auto& [k, n] : kNames)
    if (k == kind) return n;
  return "unknown";
}

std::optional<Kind> kind_from_name(std::string_view name) {
  for (auto& [k, n] : kNames)
    if (n == name) return k;
  return std::nullopt;
}

const std::vector<Kind>& all_kinds() {
  static const std::vector<Kind> kinds = [] {
    std::vector<Kind> v;
    for (auto& [k, n] : kNames) v.push_back(k);
    return v;
  }();
  return kinds;
}

}  // namespace ft
