// A run's plan from its config, as `fthost plan` and the run itself make it: the config loaded for
// the layout's world size, the model outlined on the meta device, and per rank the memory by
// phase (plan/memory_plan.h), the step time (plan/step_estimate.h) and the checkpoint's size.
#pragma once

#include "config/invocation.h"
#include "config/optimizer_state_size.h"
#include "config/training_settings.h"
#include "plan/memory_plan.h"
#include "plan/model_outline.h"
#include "plan/parallel_layout.h"
#include "plan/step_estimate.h"

#include <ft/config.h>
#include <ft/registry.h>

#include <optional>
#include <string>
#include <vector>

namespace fthost {

// The images each sample of a micro-batch carries, for a model that reads images.
struct PlannedImages {
  std::int64_t per_sample = 0;  // 0: text alone
  std::int64_t tiles = 0;       // per image; 0: the most the config admits
  // The real tiles of a micro-batch, where known (the run's own batches); 0: every image has
  // `tiles`. An encoder that skips padding tiles runs only these.
  std::int64_t real_tiles = 0;
};

struct RunPlan {
  ModelOutline model;
  ParallelLayout layout;
  RunShape run;
  OptimizerStateSize optimizer;
  MemoryPlan memory;
  StepEstimate step;
  std::string seq_len_source;             // where the sequence length came from
  std::string images_source;              // where the images per sample came from
  std::string tiles_source;               // where the tiles per image came from
  std::string device;                     // what the plan is for: "NVIDIA H100 SXM", "this machine's CPU"
  std::optional<double> device_memory;    // the budget the peak must fit in; unset: unknown
  double checkpoint_bytes = 0;            // one checkpoint on disk: model files and optimizer state
  double checkpoint_seconds = 0;          // to write it at PlanOptions::write_bandwidth
  bool has_tensor_parallel_plan = false;  // the config names one
  bool fits() const { return !device_memory || memory.peak <= *device_memory; }
};

// The memory plan of the run `root` describes with `settings`, on `world` ranks of `nodes` nodes,
// for micro-batches of `batch_size` rows of `seq_len` tokens (and `images` for a model that reads
// them); `runtime` is the process's fixed share.
RunPlan plan_run(const ft::Registry& registry, const ft::ConfigNode& root, const TrainingSettings& settings, int world,
                 int nodes, std::int64_t batch_size, std::int64_t seq_len, double runtime, bool on_gpu,
                 const PlannedImages& images = {});

// `fthost plan`: loads `inv`'s config for the layout `inv.plan` gives and plans it on the device
// it names. Throws the errors `fthost validate` gives for a config that does not validate.
// `with_step`: also the step time (on a CPU that measures a matmul; what-if plans skip it).
RunPlan plan_invocation(const Invocation& inv, bool with_step = true);

// Resident memory of this process now, bytes (0 where /proc is not readable).
double resident_bytes();

}  // namespace fthost
