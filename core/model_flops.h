// The throughput figures torchtitan logs beside tokens/s: achieved FLOP/s per rank and model
// FLOPs utilisation (MFU), the model's training FLOPs against the dense GEMM peak of this rank's
// device, measured once when training starts (no table of devices to go stale).
#pragma once

#include <ft/metric_logger.h>
#include <ft/model.h>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>

namespace fthost {

// FLOP/s of a square matmul in `dtype` on `device` with this process's threads: the median of
// five after a warm-up.
double measure_gemm_peak(const c10::Device& device, c10::ScalarType dtype);

class ModelFlops {
 public:
  // Measures the GEMM peak unless the model cannot say its FLOPs.
  ModelFlops(const ft::Model& model, const c10::Device& device, c10::ScalarType dtype);
  bool known() const { return peak_ > 0; }
  double peak() const { return peak_; }
  // `positions_per_second` per rank (the job's positions / s over its ranks), of sequences
  // `seq_len` long: tflops_per_gpu and mfu.
  ft::Metrics metrics(double positions_per_second, std::int64_t seq_len) const;

 private:
  const ft::Model& model_;
  double peak_ = 0;
};

}  // namespace fthost
