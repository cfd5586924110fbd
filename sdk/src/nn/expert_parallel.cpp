#include <ft/errors.h>
#include <ft/nn/expert_parallel.h>
#include <ft/nn/mixture_of_experts.h>
#include <ft/torch_compat.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <numeric>
#include <string>
#include <utility>

namespace ft::nn {

namespace {

at::Tensor exchanged(const at::Tensor& rows, const std::vector<std::int64_t>& output_splits,
                     const std::vector<std::int64_t>& input_splits, ft::Collectives& group) {
  const at::Tensor input = rows.detach().contiguous();
  std::vector<std::int64_t> shape = input.sizes().vec();
  shape[0] = std::accumulate(output_splits.begin(), output_splits.end(), std::int64_t{0});
  at::Tensor output = at::empty(shape, input.options());
  group.all_to_all(output, input, output_splits, input_splits);
  return output;
}

// The gradient of the rows received goes back to the ranks that sent them: the same exchange
// with the splits swapped. Every rank of the group runs the same graph, so every rank reaches
// this node in the same order and the exchanges pair up.
class AllToAllRowsBackward final : public torch::autograd::Node {
 public:
  AllToAllRowsBackward(std::shared_ptr<ft::Collectives> group, std::vector<std::int64_t> output_splits,
                       std::vector<std::int64_t> input_splits, const at::Tensor& input)
      : group_(std::move(group)),
        output_splits_(std::move(output_splits)),
        input_splits_(std::move(input_splits)),
        output_row_shape_(input.sizes().vec()),
        output_options_(input.options()) {}

  std::string name() const override { return "ft::AllToAllRowsBackward"; }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    at::Tensor grad = grads.at(0);
    // A rank whose received rows got no gradient still takes part: its peers expect its rows.
    if (!grad.defined()) {
      std::vector<std::int64_t> shape = output_row_shape_;
      shape[0] = std::accumulate(output_splits_.begin(), output_splits_.end(), std::int64_t{0});
      grad = at::zeros(shape, output_options_);
    }
    return {exchanged(grad, input_splits_, output_splits_, *group_)};
  }

 private:
  std::shared_ptr<ft::Collectives> group_;
  std::vector<std::int64_t> output_splits_, input_splits_;
  std::vector<std::int64_t> output_row_shape_;  // dim 0 aside
  at::TensorOptions output_options_;
};

std::vector<std::int64_t> block_sums(const at::Tensor& counts, int blocks) {
  const at::Tensor sums = counts.view({blocks, -1}).sum(1).contiguous();
  return std::vector<std::int64_t>(sums.data_ptr<std::int64_t>(), sums.data_ptr<std::int64_t>() + blocks);
}

}  // namespace

at::Tensor all_to_all_rows(const at::Tensor& rows, const std::vector<std::int64_t>& output_splits,
                           const std::vector<std::int64_t>& input_splits,
                           const std::shared_ptr<ft::Collectives>& group) {
  at::Tensor out = exchanged(rows, output_splits, input_splits, *group);
  if (!at::GradMode::is_enabled() || !rows.requires_grad()) return out;
  auto node = compat::make_autograd_node<AllToAllRowsBackward>(group, output_splits, input_splits, rows);
  node->set_next_edges(torch::autograd::collect_next_edges(rows));
  torch::autograd::set_history(out, node);
  return out;
}

at::Tensor run_on_expert_ranks(const GroupedExpertsImpl& local_experts, const at::Tensor& rows,
                               const at::Tensor& rows_per_expert, const std::shared_ptr<ft::Collectives>& group) {
  const int ranks = group->size();
  const std::int64_t local = local_experts.num_experts();
  if (rows_per_expert.numel() != local * ranks)
    throw ft::Error("expert parallelism: " + std::to_string(rows_per_expert.numel()) + " experts routed to, but " +
                    std::to_string(ranks) + " ranks x " + std::to_string(local) + " experts each");
  // How many rows of each of its experts every rank receives from every rank: [source, expert].
  const at::Tensor sent_counts = rows_per_expert.to(at::kCPU, at::kLong).contiguous();
  at::Tensor received_counts = at::empty_like(sent_counts);
  const std::vector<std::int64_t> per_rank(static_cast<std::size_t>(ranks), local);
  group->all_to_all(received_counts, sent_counts, per_rank, per_rank);
  const std::vector<std::int64_t> sent = block_sums(sent_counts, ranks);
  const std::vector<std::int64_t> received = block_sums(received_counts, ranks);

  const at::Tensor arrived = all_to_all_rows(rows, received, sent, group);
  // The rows arrive grouped by source rank, then expert; the grouped GEMM wants them by expert,
  // then source rank (a stable order, so each expert's rows stay in arrival order).
  const at::Tensor block = at::repeat_interleave(at::arange(ranks * local, at::kLong), received_counts);
  const at::Tensor expert_major = at::remainder(block, local) * ranks + at::floor_divide(block, local);
  const at::Tensor order = at::argsort(expert_major, /*stable=*/true).to(rows.device());
  const at::Tensor by_expert = arrived.index_select(0, order);
  const at::Tensor local_counts = received_counts.view({ranks, local}).sum(0).to(rows_per_expert.device());
  const at::Tensor computed = local_experts.forward(by_expert, local_counts);
  const at::Tensor by_source = computed.index_select(0, at::argsort(order));
  return all_to_all_rows(by_source, sent, received, group);
}

DecoderSplits split_experts(TransformerDecoderImpl& decoder, const std::shared_ptr<ft::Collectives>& group) {
  const int size = group->size();
  std::vector<MixtureOfExpertsImpl*> blocks;
  for (std::size_t i = 0; i < decoder.layers.size(); ++i) {
    auto* moe = dynamic_cast<MixtureOfExpertsImpl*>(decoder.layers[i]->mlp.get());
    if (!moe) continue;
    const std::int64_t experts = moe->experts->num_experts();
    if (experts % size != 0)
      throw ft::Error("layers." + std::to_string(i) + ".mlp.experts: its " + std::to_string(experts) +
                      " experts do not divide over " + std::to_string(size) + " expert-parallel ranks");
    blocks.push_back(moe);
  }
  if (blocks.empty()) throw ft::Error("the model has no mixture-of-experts layer whose experts could be split");
  at::NoGradGuard no_grad;
  DecoderSplits splits;
  splits.group = group;
  for (MixtureOfExpertsImpl* moe : blocks) {
    keep_slice(splits, moe->experts->w1, 0, group->rank(), size);
    keep_slice(splits, moe->experts->w3, 0, group->rank(), size);
    keep_slice(splits, moe->experts->w2, 0, group->rank(), size);
    moe->experts_over = group;
  }
  return splits;
}

}  // namespace ft::nn
