// The forward pieces of tensor-parallel modules (Megatron layout, ft/tensor_parallel.h): what a
// split Linear, attention or MLP block and a vocabulary-sharded embedding compute.
#pragma once

#include <ft/collectives.h>
#include <ft/tensor_parallel.h>

#include <ATen/core/Tensor.h>

#include <memory>

namespace ft::nn {

// A rowwise projection: this rank's partial output, summed over `group`, then the bias.
at::Tensor rowwise_parallel_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                   const std::shared_ptr<ft::Collectives>& group);
// The input of a colwise region (attention, MLP): its gradient is summed over `group` in
// backward. `x` itself when `group` is nullptr.
at::Tensor colwise_parallel_input(const at::Tensor& x, const std::shared_ptr<ft::Collectives>& group);
// A rowwise (vocabulary-sharded) embedding: each rank looks up the ids in its slice, zeros for
// the others, and the rows are summed over the group (exactly one rank contributes each).
at::Tensor vocab_parallel_embedding(const at::Tensor& weight, const at::Tensor& tokens, const ft::VocabShard& shard);

}  // namespace ft::nn
