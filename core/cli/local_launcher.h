// `fthost --nproc-per-node N ...`: starts N ranks of this same command on this machine with
// torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT on a free loopback port below the ephemeral range), forwards SIGINT, SIGTERM,
// SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to them (a third signal kills them), and when one rank
// fails stops the others: the exit code and the message say which rank failed and how.
//
// Several machines: `--nnodes N --node-rank R --master-addr A --master-port P` (torchrun's
// static rendezvous) start this node's ranks as global ranks R*nproc .. R*nproc + nproc - 1 of
// N*nproc, with torchrun's further variables (GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK, ...).
// `--max-restarts K` restarts this node's ranks after a failure, up to K times (torchrun's
// meaning); a restarted attempt resumes from the newest complete checkpoint.
#pragma once

#include <string>
#include <vector>

namespace fthost {

struct LaunchPlan {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr;  // empty: 127.0.0.1 (one node only)
  int master_port = 0;      // 0: a free loopback port (one node only)
  int max_restarts = 0;
};

// Throws ft::Error naming the option when the plan is inconsistent (a node rank not below
// --nnodes, several nodes without --master-addr / --master-port, ...).
void check_launch_plan(const LaunchPlan& plan);

// Runs this node's ranks of `plan`; the exit code as launch_local_ranks'.
int launch_ranks(const LaunchPlan& plan, const std::vector<std::string>& rank_args);

// `rank_args`: the command line each rank runs (argv[0] first), without the launcher flag.
// Returns the launcher's exit code: 0 when every rank succeeded, else the first failed rank's
// exit code (128 + signal for a rank killed by a signal), else kPreemptedExitCode when the ranks
// stopped on request.
int launch_local_ranks(int nproc, const std::vector<std::string>& rank_args);

}  // namespace fthost
