// How a sequence is split under context parallelism (ft/model_context_parallelism.h), shared by
// the host, which hands each rank its positions, and the attention that runs round the ranks.
// Load-balanced for causal attention (torchtitan's head-tail layout): the sequence is cut into
// 2n equal chunks and rank r holds chunks r and 2n-1-r, so every rank has as many early (cheap)
// queries as late (expensive) ones.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace ft {

// The chunk (of 2 * size) that rank `rank` holds first (which = 0) or second (which = 1).
inline std::int64_t context_parallel_chunk(int size, int rank, int which) {
  return which == 0 ? rank : 2 * size - 1 - rank;
}

// The global indices [seq_len / size] int64 of the positions rank `rank` of `size` holds, in the
// order it holds them. Throws ft::Error unless seq_len divides by 2 * size.
at::Tensor load_balanced_indices(std::int64_t seq_len, int size, int rank);

}  // namespace ft
