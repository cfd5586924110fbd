#include "model_flops.h"

#include <ft/clock.h>
#include <ft/log.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <vector>

namespace fthost {

double measure_gemm_peak(const c10::Device& device, c10::ScalarType dtype) {
  // Large enough for the BLAS to reach its steady rate, small enough to cost well under a second.
  const std::int64_t n = device.is_cpu() ? 1024 : 8192;
  // Constant operands: a matmul's speed does not depend on its values, and the run's random
  // number generators stay untouched.
  const at::Tensor a = at::full({n, n}, 0.5, at::TensorOptions().device(device).dtype(dtype));
  const at::Tensor b = at::full({n, n}, 0.25, at::TensorOptions().device(device).dtype(dtype));
  (void)at::mm(a, b).sum().item<double>();
  std::vector<double> seconds;
  for (int i = 0; i < 5; ++i) {
    const auto start = ft::Clock::now();
    (void)at::mm(a, b).sum().item<double>();  // .item() waits for a device to finish
    seconds.push_back(ft::seconds_since(start));
  }
  std::nth_element(seconds.begin(), seconds.begin() + 2, seconds.end());
  return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / seconds[2];
}

ModelFlops::ModelFlops(const ft::Model& model, const c10::Device& device, c10::ScalarType dtype) : model_(model) {
  if (model.training_flops_per_position(1) <= 0) {
    ft::log::info("mfu: the model does not state its FLOPs per token; tflops_per_gpu and mfu are not logged");
    return;
  }
  peak_ = measure_gemm_peak(device, dtype);
  ft::log::info("mfu: measured {:.1f} GFLOP/s for a dense {} matmul on {}; mfu is the model's FLOPs over it",
                peak_ / 1e9, c10::toString(dtype), device.str());
}

ft::Metrics ModelFlops::metrics(double positions_per_second, std::int64_t seq_len) const {
  if (!known()) return {};
  const double achieved = model_.training_flops_per_position(seq_len) * positions_per_second;
  return {{"tflops_per_gpu", achieved / 1e12}, {"mfu", achieved / peak_}};
}

}  // namespace fthost
