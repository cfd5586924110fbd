#include <ft/nn/tensor_parallel_ops.h>

#include <ATen/ATen.h>

namespace ft::nn {

at::Tensor rowwise_parallel_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                   const std::shared_ptr<ft::Collectives>& group) {
  at::Tensor out = ft::reduce_from_tensor_parallel(at::linear(x, weight), group);
  return bias.defined() ? out + bias : out;
}

at::Tensor colwise_parallel_input(const at::Tensor& x, const std::shared_ptr<ft::Collectives>& group) {
  return group ? ft::copy_to_tensor_parallel(x, group) : x;
}

at::Tensor vocab_parallel_embedding(const at::Tensor& weight, const at::Tensor& tokens, const ft::VocabShard& shard) {
  const at::Tensor local_ids = tokens - shard.offset;
  const at::Tensor here = local_ids.ge(0).logical_and(local_ids.lt(weight.size(0)));
  at::Tensor rows = at::embedding(weight, at::where(here, local_ids, at::zeros_like(local_ids)));
  rows = rows * here.unsqueeze(-1).to(rows.scalar_type());
  return ft::reduce_from_tensor_parallel(rows, shard.group);
}

}  // namespace ft::nn
