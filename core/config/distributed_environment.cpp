#include "config/distributed_environment.h"

#include <ft/errors.h>

#include <cstdlib>

namespace fthost {

namespace {

int read_int(const EnvironmentLookup& lookup, const std::string& name, std::optional<int> fallback = std::nullopt) {
  const auto text = lookup(name);
  if (!text || text->empty()) {
    if (fallback) return *fallback;
    throw ft::Error("environment: " + name + " is not set (the launcher must set it with the other rank variables)");
  }
  std::size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(*text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text->size() || value < 0)
    throw ft::Error("environment: " + name + "=\"" + *text + "\": expected a non-negative integer");
  return value;
}

// "2(x3)" or "2,1" (SLURM_TASKS_PER_NODE): the first node's count.
int first_task_count(const std::string& spec) {
  try {
    return std::stoi(spec);
  } catch (const std::exception&) {
    throw ft::Error("environment: SLURM tasks per node \"" + spec + "\": expected a count such as 2 or 2(x3)");
  }
}

void check_consistent(const DistributedEnvironment& env) {
  auto fail = [&](const std::string& what) { throw ft::Error("environment (" + env.launcher + "): " + what); };
  if (env.world_size < 1) fail("WORLD_SIZE must be >= 1");
  if (env.rank >= env.world_size)
    fail("RANK " + std::to_string(env.rank) + " is not below WORLD_SIZE " + std::to_string(env.world_size));
  if (env.local_world_size < 1 || env.local_rank >= env.local_world_size)
    fail("LOCAL_RANK " + std::to_string(env.local_rank) + " is not below LOCAL_WORLD_SIZE " +
         std::to_string(env.local_world_size));
  if (env.master_port < 1 || env.master_port > 65535)
    fail("MASTER_PORT " + std::to_string(env.master_port) + " is not a port");
}

}  // namespace

std::string first_slurm_host(const std::string& node_list) {
  std::string first;
  int depth = 0;
  for (char c : node_list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) break;
    first += c;
  }
  const auto open = first.find('[');
  if (open == std::string::npos) return first;
  const std::string prefix = first.substr(0, open);
  std::string range = first.substr(open + 1);
  const auto end = range.find_first_of("-,]");
  return prefix + range.substr(0, end);
}

DistributedEnvironment read_distributed_environment(const EnvironmentLookup& lookup) {
  DistributedEnvironment env;
  auto has = [&](const char* name) {
    auto v = lookup(name);
    return v && !v->empty();
  };
  if (has("RANK") || has("WORLD_SIZE")) {
    env.launcher = has("FTHOST_LAUNCHER") ? "fthost" : "torchrun";
    env.rank = read_int(lookup, "RANK");
    env.world_size = read_int(lookup, "WORLD_SIZE");
    env.local_rank = read_int(lookup, "LOCAL_RANK", env.rank);
    env.local_world_size = read_int(lookup, "LOCAL_WORLD_SIZE", env.world_size);
    env.master_addr = lookup("MASTER_ADDR").value_or("127.0.0.1");
    env.master_port = read_int(lookup, "MASTER_PORT", 29500);
    env.restart_count = read_int(lookup, "TORCHELASTIC_RESTART_COUNT", 0);
  } else if (has("SLURM_PROCID") && has("SLURM_NTASKS")) {
    env.launcher = "slurm";
    env.rank = read_int(lookup, "SLURM_PROCID");
    env.world_size = read_int(lookup, "SLURM_NTASKS");
    env.local_rank = read_int(lookup, "SLURM_LOCALID", 0);
    if (auto per_node = lookup("SLURM_NTASKS_PER_NODE"); per_node && !per_node->empty()) {
      env.local_world_size = first_task_count(*per_node);
    } else if (auto tasks = lookup("SLURM_TASKS_PER_NODE"); tasks && !tasks->empty()) {
      env.local_world_size = first_task_count(*tasks);
    } else {
      env.local_world_size = env.world_size;
    }
    if (auto addr = lookup("MASTER_ADDR"); addr && !addr->empty()) {
      env.master_addr = *addr;
    } else if (auto nodes = lookup("SLURM_JOB_NODELIST"); nodes && !nodes->empty()) {
      env.master_addr = first_slurm_host(*nodes);
    } else if (auto nodes2 = lookup("SLURM_NODELIST"); nodes2 && !nodes2->empty()) {
      env.master_addr = first_slurm_host(*nodes2);
    }
    env.master_port = read_int(lookup, "MASTER_PORT", 29500);
  }
  check_consistent(env);
  return env;
}

DistributedEnvironment read_distributed_environment() {
  return read_distributed_environment([](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  });
}

}  // namespace fthost
