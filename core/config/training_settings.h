// The top-level keys of a run, read once, here, and checked against each other with the seed
// recipe's own rules (fp16 refused, optimizer-in-backward vs clipping / accumulation, ...).
// Component tables are read by their plugins; nothing else in the host reads a top-level key.
#pragma once

#include "config/preemption_settings.h"
#include "config/validation_settings.h"

#include <ft/config.h>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fthost {

struct CheckpointSettings {
  std::string dir;                      // where checkpoints go: the checkpointer's output_dir
  std::int64_t save_every_n_steps = 0;  // 0: at the end of each epoch only
  std::int64_t keep_last_n = 0;         // 0: keep all
  enum class Resume { No, Newest, Path } resume = Resume::No;
  std::string resume_path;
  bool async = false;
  std::chrono::milliseconds timeout{300000};  // how long rank 0 waits for the other ranks' files
};

// Which transformer layers drop their activations in forward and recompute them in backward:
// torchtune's enable_activation_checkpointing (every layer), or ac_mode / ac_option.
struct ActivationCheckpointingSettings {
  // 0: no layer; 1: every layer; k: every k-th layer, counting from 1 (0-based layers k-1, 2k-1, ...).
  std::int64_t every_nth_layer = 0;
  std::string key;  // the config key that chose the layers, for messages
  // enable_activation_offloading: the checkpointed layers' inputs wait in host memory (CUDA).
  bool offload = false;

  // One flag per layer of a model with `num_layers` layers.
  std::vector<bool> layers(std::int64_t num_layers) const;
};

struct TrainingSettings {
  std::string output_dir;
  std::uint64_t seed = 0;
  // No seed in the config (torchtune's `seed: null`): `seed` was drawn at random by this process;
  // the recipe makes every rank use rank 0's draw, as torchtune's set_seed(None) does.
  bool seed_drawn = false;
  std::int64_t epochs = 1;
  std::optional<std::int64_t> max_steps_per_epoch;
  std::int64_t batch_size = 1;
  std::int64_t gradient_accumulation_steps = 1;
  // Unset: no clipping and no grad_norm logged. Infinity: the norm is logged, nothing clipped.
  std::optional<double> clip_grad_norm;
  bool shuffle = true;
  // Each parameter steps as soon as its gradient is final in backward (no clipping, no
  // gradient accumulation: the seed's rules).
  bool optimizer_in_bwd = false;
  c10::Device device = c10::Device(c10::DeviceType::CPU);
  c10::ScalarType dtype = c10::ScalarType::Float;
  std::int64_t log_every_n_steps = 1;
  bool log_peak_memory_stats = false;
  int num_threads = 0;  // 0: this rank's share of the machine's cores
  // Background threads making the training step's micro-batches ahead of it (0: the step makes
  // its own).
  int num_workers = 0;
  // A collective (or rank 0's wait for the other ranks' checkpoint files) not done after this
  // long fails the run on every rank.
  std::chrono::milliseconds distributed_timeout{300000};
  CheckpointSettings checkpoint;
  ActivationCheckpointingSettings activation_checkpointing;
  // tensor_parallel_dim: ranks per tensor-parallel group (1: none); tensor_parallel_plan then
  // names the plan.
  int tensor_parallel_dim = 1;
  // expert_parallel_dim: data-parallel ranks that split a mixture of experts' experts among them
  // (1: every rank holds every expert).
  int expert_parallel_dim = 1;
  // context_parallel_dim: ranks each sequence is split across (1: none); keys and values travel
  // between them as context_parallel_rotate_method says ("allgather" or "alltoall").
  int context_parallel_dim = 1;
  std::string context_parallel_rotate_method = "allgather";
  ValidationSettings validation;
  PreemptionSettings preemption;
};

// Throws ft::ConfigError naming the key, with the seed's wording where the seed has a rule.
// Reads without LibTorch (`fthost validate`): the device is checked against this build, not
// against the devices visible (resolve_device, before training).
TrainingSettings read_training_settings(const ft::ConfigNode& root);

// The top-level `device` key: "cpu", "cuda" or "cuda:N"; errors when this build has no CUDA.
c10::Device read_device(const ft::ConfigNode& root);

}  // namespace fthost
