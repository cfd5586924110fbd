// Tensor parallelism for the decoder (Megatron layout, ft/tensor_parallel.h): applying a plan to
// the decoder's modules (slicing their parameters, local head counts) and gathering the slices
// back for a checkpoint. The forward pieces the split modules call are in tensor_parallel_ops.h.
#pragma once

#include <ft/nn/transformer_decoder.h>

#include <ft/collectives.h>
#include <ft/tensor_parallel.h>

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace ft::nn {

// What applying a plan (or expert parallelism) split, for the gradient norm, the checkpoint and
// the output projection.
struct DecoderSplits {
  struct Split {
    at::Tensor parameter;  // the live parameter, now holding its slice
    std::int64_t dim;      // the dimension it was split along
  };
  std::shared_ptr<ft::Collectives> group;
  std::vector<Split> parameters;
  // The output projection's vocabulary slice (colwise output: loss parallel); nullopt when the
  // output projection is whole.
  std::optional<ft::VocabShard> output_vocab_shard;
};

// Applies `plan` to `decoder` over `group`. Throws ft::Error naming the plan entry (or module)
// the decoder cannot split as asked, before changing anything.
DecoderSplits split_decoder(TransformerDecoderImpl& decoder, const std::vector<ft::ModuleParallelism>& plan,
                            const std::shared_ptr<ft::Collectives>& group);

// `parameter` keeps its `rank`-th of `size` equal slices along `dim` (a copy: the whole is freed),
// recorded in `splits`.
void keep_slice(DecoderSplits& splits, at::Tensor& parameter, std::int64_t dim, int rank, int size);

// Collective over splits.group: every split parameter whole while `fn` runs, then its slice again.
void with_whole_parameters(const DecoderSplits& splits, const std::function<void()>& fn);

}  // namespace ft::nn
