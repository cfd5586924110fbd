#include "config/mesh_dimensions.h"

#include <string>

namespace fthost {

namespace {

void check_divides_data_parallel(const ft::ConfigNode& root, const char* key, int size, int data_parallel,
                                 const std::string& why) {
  if (size < 1) root.fail(key, "expected an integer >= 1");
  if (data_parallel % size != 0)
    root.fail(key, std::to_string(size) + " does not divide the " + std::to_string(data_parallel) +
                       " data-parallel ranks of this run (its ranks / tensor_parallel_dim): " + why);
}

}  // namespace

void check_mesh_dimensions(const ft::ConfigNode& root, int world, int tensor_parallel_size, int expert_parallel_size,
                           int context_parallel_size) {
  if (tensor_parallel_size < 1) root.fail("tensor_parallel_dim", "expected an integer >= 1");
  if (world % tensor_parallel_size != 0)
    root.fail("tensor_parallel_dim",
              std::to_string(tensor_parallel_size) + " does not divide the " + std::to_string(world) +
                  " ranks of this run: world size = data_parallel_replicate_dim x data_parallel_shard_dim x "
                  "tensor_parallel_dim");
  const int data_parallel = world / tensor_parallel_size;
  check_divides_data_parallel(root, "expert_parallel_dim", expert_parallel_size, data_parallel,
                              "the experts are split over groups of expert_parallel_dim consecutive data-parallel "
                              "ranks");
  check_divides_data_parallel(root, "context_parallel_dim", context_parallel_size, data_parallel,
                              "world size = data_parallel_replicate_dim x data_parallel_shard_dim x "
                              "context_parallel_dim x tensor_parallel_dim");
}

}  // namespace fthost
