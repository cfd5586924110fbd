#include "train/device_support.h"

#include "config/training_settings.h"

#include <ft/torch_compat.h>

#include <fstream>
#include <string>

namespace fthost {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

double peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) * 1024.0;  // reported in kB
  }
  return 0;
}

double peak_memory_bytes(const c10::Device& device) {
  if (device.is_cuda()) return ft::compat::cuda_memory_peaks(device.has_index() ? device.index() : 0).allocated_bytes;
  return peak_rss_bytes();
}

c10::Device resolve_device(const ft::ConfigNode& root) {
  const c10::Device device = read_device(root);
  if (device.is_cpu()) return device;
  const std::string name = root.get<std::string>("device");
  const auto count = ft::compat::cuda_device_count();
  if (count == 0) root.fail("device", "no CUDA device is visible to this process");
  if (device.has_index() && device.index() >= count)
    root.fail("device", "\"" + name + "\": only " + std::to_string(count) + " CUDA device(s) visible");
  return device;
}

c10::Device device_for_rank(const ft::ConfigNode& root, const c10::Device& configured, int local_rank) {
  if (!configured.is_cuda()) return configured;
  const c10::Device device = configured.has_index()
                                 ? configured
                                 : c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(local_rank));
  const auto count = ft::compat::cuda_device_count();
  if (device.index() >= count)
    root.fail("device", "local rank " + std::to_string(local_rank) + " would train on " + device.str() + ", but only " +
                            std::to_string(count) + " CUDA device(s) are visible (one per rank on a machine)");
  ft::compat::set_current_cuda_device(device.index());
  return device;
}

ft::Metrics peak_memory_stats(const c10::Device& device) {
  if (device.is_cuda()) {
    const auto peaks = ft::compat::cuda_memory_peaks(device.has_index() ? device.index() : 0);
    return {{"peak_memory_active", peaks.active_bytes / kGiB},
            {"peak_memory_alloc", peaks.allocated_bytes / kGiB},
            {"peak_memory_reserved", peaks.reserved_bytes / kGiB}};
  }
  return {{"peak_memory_rss", peak_rss_bytes() / kGiB}};
}

}  // namespace fthost
