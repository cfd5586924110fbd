// The FLOP/s that mfu divides by: a GPU's dense matmul peak from its maker's datasheet, or, where
// no datasheet figure applies (any CPU, an unlisted GPU), the best rate a dense matmul reaches on
// the device with this run's threads.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <string>

namespace fthost {

struct PeakFlops {
  double flops_per_second = 0;
  std::string source;     // for the log: "NVIDIA H100 SXM datasheet, bf16 dense" or "measured: ..."
  bool measured = false;  // not a datasheet's: a busy machine may have measured it low
};

// A GPU as its maker's datasheet gives it: what `fthost plan --device NAME` plans for.
struct DeviceDatasheet {
  std::string name;              // the plan's name for it: "h100", "h100-pcie", "a100-40gb"
  std::string model;             // "NVIDIA H100 SXM"
  double memory_bytes;           // on the device
  double tensor_core_flops;      // bf16 / fp16 dense, per second
  double fp32_flops;             // CUDA cores, no TF32
  double link_bytes_per_second;  // to the other GPUs of its node, each direction (NVLink, else PCIe)
};

// The datasheet of `name` (case-insensitive: "H100", "h100-pcie"); throws ft::Error listing the
// names known when there is none.
DeviceDatasheet find_device_datasheet(const std::string& name);
// The names find_device_datasheet knows, in table order.
std::string known_device_names();

// The datasheet's dense (no sparsity) peak for a GPU named `device_name` computing matmuls in
// `dtype`: bf16/fp16 on tensor cores, fp32 on CUDA cores (LibTorch leaves TF32 off for matmuls).
// nullopt for devices and dtypes the table does not list.
std::optional<PeakFlops> datasheet_peak_flops(const std::string& device_name, c10::ScalarType dtype);

// FLOP/s of a square matmul in `dtype` on `device` with this process's threads: the best of
// several, since anything else running on the machine can only slow one down.
double measure_gemm_peak(const c10::Device& device, c10::ScalarType dtype);

// The datasheet figure for a listed GPU, the measured one otherwise.
PeakFlops device_peak_flops(const c10::Device& device, c10::ScalarType dtype);

}  // namespace fthost
