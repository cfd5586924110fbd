#include "plan/device_peak_flops.h"

#include <ft/clock.h>
#include <ft/errors.h>
#include <ft/torch_compat.h>

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace fthost {

namespace {

struct DatasheetEntry {
  const char* name_part;  // matched against the driver's device name, first match wins
  const char* plan_name;
  const char* model;
  double tensor_core_tflops;  // bf16 / fp16 dense
  double fp32_tflops;         // CUDA cores, no TF32
  double memory_gib;
  double link_gb_per_second;  // NVLink per direction, or the PCIe slot's
};

// NVIDIA's product datasheets, dense figures (the sparse ones are twice these). The more
// specific names come first: "H100 PCIe" before "H100".
constexpr std::array<DatasheetEntry, 11> kDatasheets{{
    {"H100 PCIe", "h100-pcie", "NVIDIA H100 PCIe", 756.0, 51.0, 80, 64},
    {"H100 NVL", "h100-nvl", "NVIDIA H100 NVL", 835.0, 60.0, 94, 300},
    {"H100", "h100", "NVIDIA H100 SXM", 989.0, 67.0, 80, 450},
    {"H200 NVL", "h200-nvl", "NVIDIA H200 NVL", 835.0, 60.0, 141, 450},
    {"H200", "h200", "NVIDIA H200 SXM", 989.0, 67.0, 141, 450},
    {"GH200", "gh200", "NVIDIA GH200", 989.0, 67.0, 96, 450},
    {"B200", "b200", "NVIDIA B200", 2250.0, 80.0, 180, 900},
    {"A100-SXM4-40GB", "a100-40gb", "NVIDIA A100 40GB", 312.0, 19.5, 40, 300},
    {"A100", "a100", "NVIDIA A100 80GB", 312.0, 19.5, 80, 300},
    {"L40S", "l40s", "NVIDIA L40S", 362.0, 91.6, 48, 32},
    {"A10G", "a10g", "NVIDIA A10G", 70.0, 31.2, 24, 32},
}};

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

DeviceDatasheet find_device_datasheet(const std::string& name) {
  const std::string wanted = lowercase(name);
  for (const auto& entry : kDatasheets)
    if (wanted == entry.plan_name || wanted == lowercase(entry.model))
      return {entry.plan_name,
              entry.model,
              entry.memory_gib * 1024.0 * 1024.0 * 1024.0,
              entry.tensor_core_tflops * 1e12,
              entry.fp32_tflops * 1e12,
              entry.link_gb_per_second * 1e9};
  throw ft::Error("--device " + name + ": no datasheet for it; known: " + known_device_names() +
                  " (or give --device-memory)");
}

std::string known_device_names() {
  std::string names;
  for (const auto& entry : kDatasheets) names += (names.empty() ? "" : ", ") + std::string(entry.plan_name);
  return names;
}

std::optional<PeakFlops> datasheet_peak_flops(const std::string& device_name, c10::ScalarType dtype) {
  const bool tensor_cores = dtype == c10::kBFloat16 || dtype == c10::kHalf;
  if (!tensor_cores && dtype != c10::kFloat) return std::nullopt;
  for (const auto& entry : kDatasheets) {
    // GH200 contains "H200"; the list order alone cannot separate them, the name's word start can.
    const auto at = device_name.find(entry.name_part);
    if (at == std::string::npos || (at > 0 && device_name[at - 1] != ' ' && device_name[at - 1] != '-')) continue;
    const double tflops = tensor_cores ? entry.tensor_core_tflops : entry.fp32_tflops;
    return PeakFlops{tflops * 1e12, fmt::format("{} datasheet, {} dense", entry.model, c10::toString(dtype)), false};
  }
  return std::nullopt;
}

double measure_gemm_peak(const c10::Device& device, c10::ScalarType dtype) {
  // Large enough for the BLAS to reach its steady rate, small enough to cost about 0.1 s.
  const std::int64_t n = device.is_cpu() ? 1024 : 8192;
  // Constant operands: a matmul's speed does not depend on its values, and the run's random
  // number generators stay untouched.
  const at::Tensor a = at::full({n, n}, 0.5, at::TensorOptions().device(device).dtype(dtype));
  const at::Tensor b = at::full({n, n}, 0.25, at::TensorOptions().device(device).dtype(dtype));
  (void)at::mm(a, b).sum().item<double>();
  double fastest = 0;
  for (int i = 0; i < 8; ++i) {
    const auto start = ft::Clock::now();
    (void)at::mm(a, b).sum().item<double>();  // .item() waits for a device to finish
    const double seconds = ft::seconds_since(start);
    fastest = i == 0 ? seconds : std::min(fastest, seconds);
  }
  return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / fastest;
}

PeakFlops device_peak_flops(const c10::Device& device, c10::ScalarType dtype) {
  if (device.is_cuda()) {
    const std::string name = ft::compat::cuda_device_name(device.has_index() ? device.index() : 0);
    if (auto listed = datasheet_peak_flops(name, dtype)) return *listed;
  }
  return PeakFlops{measure_gemm_peak(device, dtype),
                   fmt::format("measured: the fastest of 8 dense {} matmuls on {}", c10::toString(dtype), device.str()),
                   true};
}

}  // namespace fthost
