#include <ft/context_parallel_layout.h>
#include <ft/errors.h>

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace ft {

at::Tensor load_balanced_indices(std::int64_t seq_len, int size, int rank) {
  if (size < 1 || rank < 0 || rank >= size)
    throw ft::Error("context parallelism: rank " + std::to_string(rank) + " outside a group of " +
                    std::to_string(size));
  if (seq_len % (2 * size) != 0)
    throw ft::Error("context parallelism: a sequence of " + std::to_string(seq_len) +
                    " positions does not split into " + std::to_string(2 * size) + " equal chunks");
  const std::int64_t chunk = seq_len / (2 * size);
  const at::TensorOptions longs = at::TensorOptions(at::kLong);
  std::vector<at::Tensor> pieces;
  for (int which = 0; which < 2; ++which) {
    const std::int64_t first = context_parallel_chunk(size, rank, which) * chunk;
    pieces.push_back(at::arange(first, first + chunk, longs));
  }
  return at::cat(pieces);
}

}  // namespace ft
