// This rank's share of a micro-batch under context parallelism (ft/context_parallel_layout.h):
// each row padded to what the split needs, then the rank's two chunks of it.
#pragma once

#include <ft/collate.h>

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace fthost {

struct ContextParallelShare {
  ft::Batch batch;     // tokens and input_pos: this rank's positions; document_lengths: the whole rows'
  at::Tensor targets;  // the shifted labels at this rank's positions
};

struct ContextParallelSplit {
  int size = 1;
  int rank = 0;
  // Rows are padded to a multiple of this: 2 x size, times the tensor-parallel degree.
  std::int64_t multiple = 2;
  std::int64_t pad_id = 0;
  std::int64_t ignore_index = -100;
};

// `targets`: the batch's labels shifted as the loss reads them. Padding adds pad_id tokens with
// ignored targets at the end of each row (a packed row's padding is a document of its own), so
// no real position attends to it and the loss and token count are the unsplit batch's. input_pos
// becomes the global positions (a packed row's own, continued over the padding). Throws
// ft::Error when the batch carries an [s, s] mask, which does not split.
ContextParallelShare context_parallel_share(const ft::Batch& batch, const at::Tensor& targets,
                                            const ContextParallelSplit& split);

}  // namespace fthost
