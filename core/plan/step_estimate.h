// A step's time from arithmetic, not measurement: the FLOPs each rank computes (the formula the
// run's mfu uses, ft::Model::training_flops_per_position) at an assumed share of the device's
// peak, plus the bytes each rank sends per step for its layout over the links it crosses.
#pragma once

#include "plan/memory_plan.h"
#include "plan/model_outline.h"

#include <string>
#include <vector>

namespace fthost {

struct StepAssumptions {
  double peak_flops = 0;  // per device
  std::string peak_source;
  double mfu = 0.4;
  int ranks_per_node = 1;
  double intra_node_bandwidth = 0;  // bytes/s each direction; 0: communication not estimated
  double inter_node_bandwidth = 0;
};

struct StepEstimate {
  double flops_per_rank = 0;
  double image_flops_per_rank = 0;  // of them, encoding images (a model that reads them)
  double compute_seconds = 0;
  double communication_bytes = 0;  // per rank per step
  double communication_seconds = 0;
  bool overlapped = false;  // FSDP prefetch: communication hidden behind compute where shorter
  double step_seconds = 0;
  double tokens_per_step = 0;  // the job's
  double tokens_per_second = 0;
  std::vector<std::string> assumptions;
};

StepEstimate estimate_step(const ModelOutline& model, const ParallelLayout& layout, const RunShape& run,
                           const StepAssumptions& assumptions);

}  // namespace fthost
