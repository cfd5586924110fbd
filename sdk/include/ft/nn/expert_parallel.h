// Expert parallelism for ft::nn's mixture-of-experts blocks: rows exchanged all-to-all as an
// autograd operation, a block's rows computed on the ranks holding their experts, and a decoder's
// experts split across a group (ft/model_expert_parallelism.h).
#pragma once

#include <ft/collectives.h>
#include <ft/nn/grouped_experts.h>
#include <ft/nn/tensor_parallel_decoder.h>
#include <ft/nn/transformer_decoder.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace ft::nn {

// Sends `rows` in consecutive blocks, input_splits[r] rows to rank r of `group`, and returns the
// rows received, output_splits[r] from each rank r in rank order. In backward the gradient
// travels back the way the rows came.
at::Tensor all_to_all_rows(const at::Tensor& rows, const std::vector<std::int64_t>& output_splits,
                           const std::vector<std::int64_t>& input_splits,
                           const std::shared_ptr<ft::Collectives>& group);

// `rows` grouped by expert over the whole layer's experts (rows_per_expert: [experts] int64),
// each rank of `group` holding `local_experts`, its consecutive share: every block goes to its
// expert's rank, is computed there and comes back. The result is what the whole layer's experts
// compute for `rows` on one rank.
at::Tensor run_on_expert_ranks(const GroupedExpertsImpl& local_experts, const at::Tensor& rows,
                               const at::Tensor& rows_per_expert, const std::shared_ptr<ft::Collectives>& group);

// Every mixture-of-experts layer of `decoder` keeps this rank's share of its experts (w1, w2, w3
// along dim 0) and exchanges its rows over `group`. Throws ft::Error, before changing anything,
// when the decoder has no such layer or a layer's experts do not divide by the group's size.
DecoderSplits split_experts(TransformerDecoderImpl& decoder, const std::shared_ptr<ft::Collectives>& group);

}  // namespace ft::nn
