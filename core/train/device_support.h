// Which devices this build can train on, and the peak-memory figures the recipe logs
// (`log_peak_memory_stats`): CUDA allocator statistics on GPU, the process's peak RSS on CPU.
#pragma once

#include <ft/config.h>
#include <ft/metric_logger.h>

#include <c10/core/Device.h>

namespace fthost {

// The top-level `device` key: "cpu", "cuda" or "cuda:N". Errors when this build or machine
// cannot run it, rather than falling back to the CPU.
c10::Device resolve_device(const ft::ConfigNode& root);

// The device this rank trains on, made the current one: "cuda" means the rank's own GPU,
// cuda:LOCAL_RANK, as torchtune's get_device; an index given in the config is kept. Errors, naming
// `device`, when that GPU is not visible.
c10::Device device_for_rank(const ft::ConfigNode& root, const c10::Device& configured, int local_rank);

// Peak memory since the start (GiB), in the order the recipe logs them.
ft::Metrics peak_memory_stats(const c10::Device& device);

// VmHWM: the resident-set high-water mark the kernel keeps for the process, bytes.
double peak_rss_bytes();
// The peak the memory plan is compared with: the caching allocator's allocated bytes on CUDA,
// the process's peak resident set on the CPU.
double peak_memory_bytes(const c10::Device& device);

}  // namespace fthost
