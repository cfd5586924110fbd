// Log lines in a multi-rank run: rank 0 logs everything; the other ranks only warnings and
// errors, each line prefixed with its rank, so a failure says where it happened.
#pragma once

namespace fthost {

void configure_rank_logging(int rank, int world_size);

}  // namespace fthost
