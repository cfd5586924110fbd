// The kinds of component a plugin can provide. Each interface header declares its kind.
#pragma once

#include <ft/export.h>

#include <optional>
#include <string_view>
#include <vector>

namespace ft {

enum class Kind {
  Model,
  Loss,
  Optimizer,
  LRScheduler,
  MetricLogger,
  Parallelism,
  Tokenizer,
  Dataset,
  Collate,
  Checkpointer,
  Profiler,
  TensorParallelPlan,
};

// "model", "loss", "optimizer", "lr_scheduler", "metric_logger", ... as used in config tables.
FT_API std::string_view kind_name(Kind kind);
FT_API std::optional<Kind> kind_from_name(std::string_view name);
FT_API const std::vector<Kind>& all_kinds();

}  // namespace ft
