// A stand-in process group for planning: rank 0 of `size` ranks, so a model split across it on
// the meta device keeps the slice rank 0 of a real group would. It never communicates: any
// collective is an error (planning runs no forward).
#pragma once

#include <ft/collectives.h>

#include <memory>

namespace fthost {

std::shared_ptr<ft::Collectives> planning_group(int size);

}  // namespace fthost
