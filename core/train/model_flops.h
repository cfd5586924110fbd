// The throughput figures torchtitan logs beside tokens/s: achieved FLOP/s per rank and model
// FLOPs utilisation (MFU), the model's training FLOPs (docs/performance.md, "MFU") over the peak
// of this rank's device (core/device_peak_flops.h).
#pragma once

#include "plan/device_peak_flops.h"

#include <ft/metric_logger.h>
#include <ft/model.h>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>

namespace fthost {

class ModelFlops {
 public:
  // Finds the device's peak unless the model cannot say its FLOPs.
  ModelFlops(const ft::Model& model, const c10::Device& device, c10::ScalarType dtype);
  bool known() const { return peak_.flops_per_second > 0; }
  double peak() const { return peak_.flops_per_second; }
  // `positions_per_second` per rank (the job's positions / s over its ranks), of sequences
  // `seq_len` long, and `image_flops_per_second` per rank (encoding images,
  // ModelImageInput::image_training_flops), at optimizer step `step`: tflops_per_gpu and mfu.
  ft::Metrics metrics(double positions_per_second, std::int64_t seq_len, std::int64_t step,
                      double image_flops_per_second = 0);

 private:
  const ft::Model& model_;
  PeakFlops peak_;
};

}  // namespace fthost
