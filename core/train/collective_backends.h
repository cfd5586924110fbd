// Which c10d backend carries which tensors, as the seed's
// init_process_group("cuda:nccl,cpu:gloo"): Gloo for CPU tensors in every run, and NCCL for CUDA
// tensors when the run's device is CUDA. No LibTorch libraries: the choice is tested without them.
#pragma once

#include <c10/core/DeviceType.h>

#include <string>

namespace fthost {

enum class CollectiveBackend { none, gloo, nccl };

struct CollectiveBackends {
  CollectiveBackend cpu = CollectiveBackend::gloo;
  CollectiveBackend accelerator = CollectiveBackend::none;  // for the device's tensors, when not the CPU
  std::string spec;                                         // torch's spelling: "cpu:gloo" or "cuda:nccl,cpu:gloo"
};

CollectiveBackends collective_backends(c10::DeviceType device);

}  // namespace fthost
