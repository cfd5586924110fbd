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

// Peak memory since the start (GiB), in the order the recipe logs them.
ft::Metrics peak_memory_stats(const c10::Device& device);

}  // namespace fthost
