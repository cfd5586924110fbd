// The run's memory plan beside what it measures: the plan (plan/run_plan.h) for the shape of the
// micro-batches the run actually trains on, and the peak so far, logged once, after the second
// optimizer step (the first step at which every phase has run with the optimizer state), or
// after the last when the run has one step. On a CPU the runtime's share is the process's
// resident memory before the model exists; on CUDA the plan's allocator bytes are compared with
// the caching allocator's peak (the CUDA context is outside both).
#pragma once

#include "config/distributed_environment.h"
#include "config/training_settings.h"
#include "plan/run_plan.h"

#include <ft/config.h>
#include <ft/registry.h>

#include <cstdint>

namespace fthost {

class PlannedMemoryCheck {
 public:
  // Call before the model is built.
  explicit PlannedMemoryCheck(const c10::Device& device);
  // After each optimizer step of this process; `last_step`: the run ends with it. The step's
  // longest micro-batch had `rows` x `seq_len` tokens before any context-parallel split, and its
  // samples at most `images` (none: text alone).
  void after_step(bool last_step, std::int64_t rows, std::int64_t seq_len, const PlannedImages& images,
                  const ft::Registry& registry, const ft::ConfigNode& root, const TrainingSettings& settings,
                  const DistributedEnvironment& env);

 private:
  double runtime_ = 0;
  std::int64_t steps_ = 0;  // optimizer steps this process has run
};

}  // namespace fthost
