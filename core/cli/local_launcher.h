// `fthost --nproc-per-node N ...`: starts N ranks of this same command on this machine with
// torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT on a free loopback port below the ephemeral range), forwards SIGINT/SIGTERM to
// them, and when one rank fails stops the others: the exit code and the message say which rank
// failed and how.
#pragma once

#include <string>
#include <vector>

namespace fthost {

// `rank_args`: the command line each rank runs (argv[0] first), without the launcher flag.
// Returns the launcher's exit code: 0 when every rank succeeded, else the first failed rank's
// exit code (128 + signal for a rank killed by a signal).
int launch_local_ranks(int nproc, const std::vector<std::string>& rank_args);

}  // namespace fthost
