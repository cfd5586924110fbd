// ft::Collectives over LibTorch's c10d: a TCPStore rendezvous at MASTER_ADDR:MASTER_PORT and
// ProcessGroupGloo, held as its own type: a ProcessGroup in LibTorch 1.13, a c10d Backend in 2.x,
// with the same collectives in both (NCCL for CUDA builds is not wired yet: docs/distributed.md). Every
// failure — a peer that exited, a collective past the timeout — becomes an ft::Error naming
// this rank, the operation and the timeout, never a hang.
#pragma once

#include "distributed_environment.h"

#include <ft/collectives.h>

#include <chrono>
#include <memory>

namespace fthost {

struct ProcessGroups {
  std::shared_ptr<ft::Collectives> world;
  ft::GroupFactory new_group;
};

// Collective over all ranks of `env`: blocks until every rank has connected or `timeout` passes.
ProcessGroups connect_process_groups(const DistributedEnvironment& env, std::chrono::milliseconds timeout);

// One rank: collectives that are the identity.
ProcessGroups single_process_groups();

}  // namespace fthost
