// The device mesh's dimensions checked against a world size, before any group exists: the run
// checks them as it builds its mesh (train/device_mesh.h), `fthost plan` for the layout it plans,
// with the same words.
#pragma once

#include <ft/config.h>

namespace fthost {

// Throws ft::ConfigError naming `tensor_parallel_dim` when it is below 1 or does not divide
// `world`, and `expert_parallel_dim` or `context_parallel_dim` when it does not divide the
// data-parallel ranks (world / tensor_parallel_dim).
void check_mesh_dimensions(const ft::ConfigNode& root, int world, int tensor_parallel_size, int expert_parallel_size,
                           int context_parallel_size);

}  // namespace fthost
