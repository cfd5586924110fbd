// The communication of tensor parallelism as autograd nodes (Node subclasses: they own the
// group they talk over until their backward has run), the plan pattern matching, and the
// vocabulary-parallel cross-entropy built from them.
#include <ft/errors.h>
#include <ft/tensor_parallel.h>
#include <ft/torch_compat.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <fnmatch.h>

#include <string>
#include <utility>

namespace ft {

namespace {

enum class BackwardReduction { Sum, None };

// The backward of copy_to (the gradient summed over the group) or of reduce_from (unchanged).
class TensorParallelBackward final : public torch::autograd::Node {
 public:
  TensorParallelBackward(std::shared_ptr<Collectives> group, BackwardReduction reduction)
      : group_(std::move(group)), reduction_(reduction) {}

  std::string name() const override {
    return reduction_ == BackwardReduction::Sum ? "ft::CopyToTensorParallelBackward"
                                                : "ft::ReduceFromTensorParallelBackward";
  }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    at::Tensor grad = grads.at(0);
    if (reduction_ == BackwardReduction::None || !grad.defined()) return {grad};
    // Every rank of the group runs the same graph, so each reaches this node in the same order
    // (and with a gradient or without one alike): the collectives pair up.
    at::Tensor summed = grad.contiguous().clone();
    group_->all_reduce_sum(summed);
    return {summed};
  }

 private:
  std::shared_ptr<Collectives> group_;
  BackwardReduction reduction_;
};

at::Tensor attach(at::Tensor output, const at::Tensor& input, std::shared_ptr<Collectives> group,
                  BackwardReduction reduction) {
  auto node = compat::make_autograd_node<TensorParallelBackward>(std::move(group), reduction);
  node->set_next_edges(torch::autograd::collect_next_edges(input));
  torch::autograd::set_history(output, node);
  return output;
}

bool differentiable(const at::Tensor& x) { return at::GradMode::is_enabled() && x.requires_grad(); }

at::Tensor summed_over(const at::Tensor& x, Collectives& group) {
  at::Tensor sum = x.detach().contiguous().clone();
  group.all_reduce_sum(sum);
  return sum;
}

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}

}  // namespace

std::string_view parallel_style_name(ParallelStyle style) {
  switch (style) {
    case ParallelStyle::Colwise: return "colwise";
    case ParallelStyle::Rowwise: return "rowwise";
    case ParallelStyle::SequenceParallel: return "sequence_parallel";
    case ParallelStyle::PrepareModuleInput: return "prepare_module_input";
    case ParallelStyle::NoParallel: return "no_parallel";
    case ParallelStyle::ExpertTensorParallel: return "expert_tensor_parallel";
  }
  return "unknown";
}

bool module_pattern_matches(std::string_view pattern, std::string_view module) {
  const auto want = components(pattern);
  const auto have = components(module);
  if (want.size() != have.size()) return false;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (fnmatch(std::string(want[i]).c_str(), std::string(have[i]).c_str(), 0) != 0) return false;
  return true;
}

at::Tensor copy_to_tensor_parallel(const at::Tensor& x, const std::shared_ptr<Collectives>& group) {
  if (!differentiable(x)) return x;
  // A tensor of its own (sharing the values) so the node can become its history.
  return attach(x.detach(), x, group, BackwardReduction::Sum);
}

at::Tensor reduce_from_tensor_parallel(const at::Tensor& x, const std::shared_ptr<Collectives>& group) {
  at::Tensor sum = summed_over(x, *group);
  if (!differentiable(x)) return sum;
  return attach(std::move(sum), x, group, BackwardReduction::None);
}

at::Tensor vocab_parallel_cross_entropy_sum(const at::Tensor& local_logits, const at::Tensor& targets,
                                            std::int64_t ignore_index, const VocabShard& shard) {
  if (!shard.group) throw Error("vocab_parallel_cross_entropy_sum: no tensor-parallel group");
  Collectives& group = *shard.group;
  const std::int64_t local_vocab = local_logits.size(-1);
  const at::Tensor logits = local_logits.reshape({-1, local_vocab}).to(at::kFloat);
  const at::Tensor flat_targets = targets.reshape({-1});
  const std::int64_t rows = logits.size(0);
  if (rows == 0) return logits.sum();

  // The row maxima over the whole vocabulary: a shift for stability that cancels in the
  // gradient, so it is computed without one.
  const at::Tensor local_max = std::get<0>(logits.detach().max(-1)).contiguous();
  at::Tensor every_max = at::empty({group.size() * rows}, local_max.options());
  group.all_gather(every_max, local_max);
  const at::Tensor row_max = std::get<0>(every_max.view({group.size(), rows}).max(0));

  const at::Tensor shifted = logits - row_max.unsqueeze(1);
  const at::Tensor sum_exp = reduce_from_tensor_parallel(shifted.exp().sum(-1), shard.group);

  const at::Tensor valid = flat_targets.ne(ignore_index);
  const at::Tensor local_target = flat_targets - shard.offset;
  const at::Tensor here = valid.logical_and(local_target.ge(0)).logical_and(local_target.lt(local_vocab));
  const at::Tensor index = at::where(here, local_target, at::zeros_like(local_target)).unsqueeze(1);
  const at::Tensor picked_here = at::where(here, shifted.gather(1, index).squeeze(1), at::zeros({}, logits.options()));
  const at::Tensor picked = reduce_from_tensor_parallel(picked_here, shard.group);

  const at::Tensor per_token = sum_exp.log() - picked;
  return at::where(valid, per_token, at::zeros({}, per_token.options())).sum();
}

}  // namespace ft
