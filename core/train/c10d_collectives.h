// ft::Collectives over LibTorch's c10d: a TCPStore rendezvous at MASTER_ADDR:MASTER_PORT, then
// c10d backends as the seed's init_process_group("cuda:nccl,cpu:gloo"): Gloo for CPU tensors
// always, NCCL for CUDA tensors when the run is on CUDA (collective_backends.h). Every failure — a
// peer that exited, a collective past the timeout — becomes an ft::Error naming this rank, the
// backend, the operation and its cause, never a hang.
#pragma once

#include "config/distributed_environment.h"
#include "train/collective_backends.h"

#include <ft/collectives.h>

#include <chrono>
#include <memory>

namespace fthost {

struct ProcessGroups {
  std::shared_ptr<ft::Collectives> world;
  ft::GroupFactory new_group;
};

// Collective over all ranks of `env`: blocks until every rank has connected or `timeout` passes.
// `device` is the run's: CUDA adds NCCL for CUDA tensors (collective_backends()).
ProcessGroups connect_process_groups(const DistributedEnvironment& env, std::chrono::milliseconds timeout,
                                     c10::DeviceType device);

// One rank: collectives that are the identity.
ProcessGroups single_process_groups();

}  // namespace fthost
