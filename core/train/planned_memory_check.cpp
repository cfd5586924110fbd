#include "train/planned_memory_check.h"

#include "config/byte_size.h"
#include "plan/run_plan.h"
#include "train/device_support.h"

#include <ft/log.h>

#include <exception>

namespace fthost {

PlannedMemoryCheck::PlannedMemoryCheck(const c10::Device& device)
    : runtime_(device.is_cuda() ? 0.0 : resident_bytes()) {}

void PlannedMemoryCheck::after_step(bool last_step, std::int64_t rows, std::int64_t seq_len,
                                    const PlannedImages& images, const ft::Registry& registry,
                                    const ft::ConfigNode& root, const TrainingSettings& settings,
                                    const DistributedEnvironment& env) {
  ++steps_;
  if (steps_ != 2 && !(steps_ == 1 && last_step)) return;
  const double measured = peak_memory_bytes(settings.device);
  try {
    const int nodes = std::max(1, env.world_size / std::max(1, env.local_world_size));
    const RunPlan plan = plan_run(registry, root, settings, env.world_size, nodes, rows, seq_len, runtime_,
                                  settings.device.is_cuda(), images);
    ft::log::info(
        "memory: planned peak {} per rank ({}; {} of it the process before the model), measured {} ({}) "
        "after step {}: {:.2f}x the plan",
        format_bytes(plan.memory.peak), plan.memory.peak_phase, format_bytes(runtime_), format_bytes(measured),
        settings.device.is_cuda() ? "the CUDA caching allocator's peak" : "peak resident set", steps_,
        measured / plan.memory.peak);
  } catch (const std::exception& e) {
    // The plan is a report: a model or strategy it cannot count never stops the training.
    ft::log::warn("memory: no plan to compare with ({}); measured peak {}", e.what(), format_bytes(measured));
  }
}

}  // namespace fthost
