// A rank's memory through one optimizer step, counted from the model's outline, the parallel
// layout and the run's settings (docs/plan.md says what each line counts and what it assumes):
// parameters, gradients and optimizer state as this rank holds them, the activations autograd
// keeps for backward under the run's checkpointing policy, the logits, the parameters and
// gradients FSDP gathers around a unit, and the runtime's fixed share. The peak is the largest
// of the step's phases, in the steady state (the optimizer state exists from the first step on).
#pragma once

#include "config/optimizer_state_size.h"
#include "plan/model_outline.h"

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fthost {

struct ParallelLayout {
  int world = 1;
  int nodes = 1;
  std::string strategy;  // parallelism._component_
  bool sharded = false;  // FSDP / HSDP: parameters, gradients and state split over `shard` ranks
  int shard = 1;
  int replicate = 1;
  int tensor = 1;
  int context = 1;
  int expert = 1;
  bool reshard_after_forward = true;
  bool prefetch = false;
  bool cpu_offload = false;         // on a GPU: shards, gradients and state in host memory
  bool separate_embedding = false;  // custom_sharded_layers: tok_embeddings
  bool separate_output = false;     // custom_sharded_layers: output

  int data_parallel() const { return world / tensor; }
};

struct RunShape {
  std::int64_t batch_size = 1;  // per rank, per micro-batch
  std::int64_t seq_len = 0;
  std::int64_t accumulation = 1;
  c10::ScalarType dtype = c10::kFloat;
  bool on_gpu = false;
  std::vector<bool> checkpointed;  // per checkpointable layer (LayerOutline::checkpoint_index)
  bool offload_activations = false;
  bool optimizer_in_backward = false;
  bool loss_projects_hidden = false;  // LinearCrossEntropyLoss: no [tokens, vocab] logits tensor
  int loss_chunks = 1;
  // A model that reads images (ModelOutline::image): each sample's images, each image's tiles.
  // 0 images: text alone (the image encoder and the cross-attention layers do not run).
  std::int64_t images_per_sample = 0;
  std::int64_t tiles_per_image = 0;
  std::int64_t real_tiles = 0;  // in a micro-batch, where known; 0: every image has tiles_per_image
};

struct MemoryLine {
  std::string name;
  double bytes = 0;
  std::string detail;
};

struct PhaseMemory {
  std::string name;
  double bytes = 0;
};

struct MemoryPlan {
  std::vector<MemoryLine> lines;    // what the peak is made of, in the peak's phase
  std::vector<PhaseMemory> phases;  // in step order
  double peak = 0;                  // on the device (the host for a CPU run), runtime included
  std::string peak_phase;
  double host_bytes = 0;  // kept in host memory by offloading (GPU runs)
  double runtime = 0;
  double parameters = 0, gradients = 0, optimizer_state = 0;
  double activations = 0;        // kept for backward by one micro-batch's forward
  double image_activations = 0;  // the part an image encoder and the cross-attention layers keep
  double logits = 0;
  double gathered = 0;  // FSDP's gathered parameters at the peak
  std::vector<std::string> assumptions;
};

// "fp32", "bf16": the config's spelling of a training dtype.
std::string dtype_name(c10::ScalarType dtype);

// `runtime` is the process's fixed share: what the host measured before the model exists (CPU),
// or the CUDA context's.
MemoryPlan plan_memory(const ModelOutline& model, const ParallelLayout& layout, const RunShape& run,
                       const OptimizerStateSize& optimizer, double runtime);

}  // namespace fthost
