// A group of one rank: every collective is the identity (a copy where it has an output). A run
// of one process, and a mesh dimension of size one, communicate through it without a backend.
#pragma once

#include <ft/collectives.h>

#include <memory>

namespace ft {

std::shared_ptr<Collectives> one_rank_group();

}  // namespace ft
