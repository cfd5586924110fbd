// Registration of the ft_parallelism plugin's strategies.
#pragma once

#include <ft/registry.h>

namespace ft_parallelism {

void register_single_device(ft::Registry& reg);
void register_data_parallel(ft::Registry& reg);
void register_fully_sharded(ft::Registry& reg);

}  // namespace ft_parallelism
