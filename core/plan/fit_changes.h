// When a plan does not fit its device: the changes that make it fit, cheapest first (activation
// checkpointing, smaller micro-batches with more accumulation, the optimizer in backward, 8-bit
// optimizer states, FSDP's CPU offload, more ranks, tensor and context parallelism), each planned
// again through the same path as the original (plan_invocation with its overrides added), so a
// change the config's rules refuse is never suggested.
#pragma once

#include "config/invocation.h"
#include "plan/run_plan.h"

#include <string>
#include <vector>

namespace fthost {

struct FitChange {
  std::string description;
  std::vector<std::string> overrides;  // key=value, as on the command line
  int nproc_per_node = 1;
  int nnodes = 1;
  double peak = 0;
  bool fits = false;
  bool combined = false;  // several of the changes above together (none fits alone)
};

// Empty when `plan` fits or its budget is unknown.
std::vector<FitChange> changes_that_fit(const Invocation& inv, const RunPlan& plan);

}  // namespace fthost
