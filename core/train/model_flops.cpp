#include "train/model_flops.h"

#include <ft/log.h>

namespace fthost {

ModelFlops::ModelFlops(const ft::Model& model, const c10::Device& device, c10::ScalarType dtype) : model_(model) {
  if (model.training_flops_per_position(1) <= 0) {
    ft::log::info("mfu: the model does not state its FLOPs per token; tflops_per_gpu and mfu are not logged");
    return;
  }
  peak_ = device_peak_flops(device, dtype);
  ft::log::info("mfu: peak {:.6f} GFLOP/s ({}); mfu is the model's training FLOPs over it",
                peak_.flops_per_second / 1e9, peak_.source);
}

ft::Metrics ModelFlops::metrics(double positions_per_second, std::int64_t seq_len, std::int64_t step,
                                double image_flops_per_second) {
  if (!known()) return {};
  const double achieved = model_.training_flops_per_position(seq_len) * positions_per_second + image_flops_per_second;
  if (achieved > peak_.flops_per_second) {
    if (peak_.measured) {
      // The model's own matmuls went faster than the measured peak, so that measurement was
      // slowed (the machine was busy then): the best rate seen is the better estimate of the peak.
      ft::log::warn(
          "mfu: step {} achieved {:.6f} GFLOP/s, above the measured peak ({:.6f}); the machine was busy when the "
          "peak was measured, so the peak is now {:.6f} GFLOP/s",
          step, achieved / 1e9, peak_.flops_per_second / 1e9, achieved / 1e9);
      peak_.flops_per_second = achieved;
    } else {
      ft::log::warn("mfu: step {} achieved {:.3f} TFLOP/s, above the device's datasheet peak ({}: {:.3f}); mfu {:.3f}",
                    step, achieved / 1e12, peak_.source, peak_.flops_per_second / 1e12,
                    achieved / peak_.flops_per_second);
    }
  }
  return {{"tflops_per_gpu", achieved / 1e12}, {"mfu", achieved / peak_.flops_per_second}};
}

}  // namespace fthost
