#include "train/context_parallel_batch.h"

#include <ft/context_parallel_layout.h>
#include <ft/errors.h>

#include <ATen/ATen.h>

#include <string>

namespace fthost {

namespace {

at::Tensor padded(const at::Tensor& rows, std::int64_t extra, std::int64_t value) {
  if (extra == 0) return rows;
  return at::cat({rows, at::full({rows.size(0), extra}, value, rows.options())}, 1);
}

}  // namespace

ContextParallelShare context_parallel_share(const ft::Batch& batch, const at::Tensor& targets,
                                            const ContextParallelSplit& split) {
  if (batch.mask.defined())
    throw ft::Error(
        "context parallelism: the collate built an [s, s] attention mask, which does not split across ranks; "
        "packed rows split by their document lengths");
  const std::int64_t rows = batch.tokens.size(0), seq_len = batch.tokens.size(1);
  const std::int64_t multiple = split.multiple;
  const std::int64_t extra = (multiple - seq_len % multiple) % multiple;
  const std::int64_t padded_len = seq_len + extra;

  at::Tensor positions;
  if (batch.input_pos.defined()) {
    // A packed row's positions restart at each document; the padding continues the last one.
    positions = batch.input_pos;
    if (extra > 0) {
      const at::Tensor last = positions.narrow(1, seq_len - 1, 1);
      positions = at::cat({positions, last + at::arange(1, extra + 1, positions.options()).unsqueeze(0)}, 1);
    }
  } else {
    positions = at::arange(padded_len, batch.tokens.options()).unsqueeze(0).expand({rows, padded_len});
  }

  const at::Tensor mine = ft::load_balanced_indices(padded_len, split.size, split.rank).to(batch.tokens.device());
  ContextParallelShare share;
  share.batch.tokens = padded(batch.tokens, extra, split.pad_id).index_select(1, mine);
  share.batch.labels = padded(batch.labels, extra, split.ignore_index).index_select(1, mine);
  share.batch.input_pos = positions.index_select(1, mine);
  share.targets = padded(targets, extra, split.ignore_index).index_select(1, mine.to(targets.device()));
  share.batch.document_lengths = batch.document_lengths;
  if (extra > 0)
    for (auto& lengths : share.batch.document_lengths) lengths.push_back(extra);
  return share;
}

}  // namespace fthost
