#include "train/expert_load_metrics.h"

#include <ATen/ATen.h>

namespace fthost {

ft::Metrics expert_load_metrics(const at::Tensor& expert_load) {
  const at::Tensor load = expert_load.to(at::kCPU, at::kDouble);
  const at::Tensor mean = load.mean(1);
  // Population standard deviation: the experts are all there is, not a sample of them.
  const at::Tensor deviation = load.std(1, /*unbiased=*/false);
  const at::Tensor cv = at::where(mean > 0, deviation / mean, at::zeros_like(mean));
  return {{"expert_tokens_min", load.min().item<double>()},
          {"expert_tokens_max", load.max().item<double>()},
          {"expert_load_cv", cv.max().item<double>()}};
}

}  // namespace fthost
