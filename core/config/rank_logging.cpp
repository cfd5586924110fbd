#include "config/rank_logging.h"

#include <ft/log.h>

#include <algorithm>
#include <string>

namespace fthost {

void configure_rank_logging(int rank, int world_size) {
  if (world_size <= 1) return;
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e [rank " + std::to_string(rank) + "] %^%l%$ %v");
  // log_level may make every rank quieter, never the other ranks louder.
  if (rank != 0) spdlog::set_level(std::max(spdlog::get_level(), spdlog::level::warn));
}

}  // namespace fthost
