// Where this process sits in a distributed run, read from the launcher's environment:
// fthost's own `--nproc-per-node` launcher and torchrun (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), or SLURM's srun (SLURM_PROCID, SLURM_NTASKS,
// SLURM_LOCALID, the first host of SLURM_JOB_NODELIST). No variables: one rank.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace fthost {

struct DistributedEnvironment {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string launcher = "none";  // "none", "fthost", "torchrun", "slurm"
  int restart_count = 0;          // TORCHELASTIC_RESTART_COUNT: 0 on the first attempt
};

using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;

// Throws ft::Error naming the variable when one is malformed or inconsistent.
DistributedEnvironment read_distributed_environment(const EnvironmentLookup& lookup);
DistributedEnvironment read_distributed_environment();  // the process environment

// The first host of a SLURM node list: "gpu[003-005,9],cpu1" -> "gpu003".
std::string first_slurm_host(const std::string& node_list);

}  // namespace fthost
