// How evenly a mixture of experts spread a step's tokens, as logged metrics, so routing collapse
// (a few experts taking most tokens) shows in the run's logs.
#pragma once

#include <ft/metric_logger.h>

#include <ATen/core/Tensor.h>

namespace fthost {

// expert_load: token choices per expert over the step and every data-parallel rank, [sparse
// layers, experts]. Gives expert_tokens_min and expert_tokens_max (over every sparse layer's
// experts) and expert_load_cv (the coefficient of variation, std / mean, of the most unevenly
// loaded layer; 0 is perfect balance).
ft::Metrics expert_load_metrics(const at::Tensor& expert_load);

}  // namespace fthost
