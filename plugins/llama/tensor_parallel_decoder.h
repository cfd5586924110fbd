// Tensor parallelism for the Llama-family decoder (Megatron layout, ft/tensor_parallel.h):
// applying a plan to the decoder's modules (slicing their parameters, local head counts), the
// forward pieces the modules call once split, and gathering the slices back for a checkpoint.
#pragma once

#include "transformer_decoder.h"

#include <ft/collectives.h>
#include <ft/tensor_parallel.h>

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace ft_llama {

// A rowwise projection: this rank's partial output, summed over `group`, then the bias.
at::Tensor rowwise_parallel_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                   const std::shared_ptr<ft::Collectives>& group);
// The input of a colwise region (attention, MLP): its gradient is summed over `group` in
// backward. `x` itself when `group` is nullptr.
at::Tensor colwise_parallel_input(const at::Tensor& x, const std::shared_ptr<ft::Collectives>& group);
// A rowwise (vocabulary-sharded) embedding: each rank looks up the ids in its slice, zeros for
// the others, and the rows are summed over the group (exactly one rank contributes each).
at::Tensor vocab_parallel_embedding(const at::Tensor& weight, const at::Tensor& tokens, const ft::VocabShard& shard);

// What applying a plan split, for the gradient norm, the checkpoint and the output projection.
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

// Collective over splits.group: every split parameter whole while `fn` runs, then its slice again.
void with_whole_parameters(const DecoderSplits& splits, const std::function<void()>& fn);

}  // namespace ft_llama
