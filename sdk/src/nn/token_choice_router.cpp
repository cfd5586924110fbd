#include <ft/errors.h>
#include <ft/nn/token_choice_router.h>
#include <ft/tensor_parallel.h>

#include <ATen/ATen.h>

namespace ft::nn {

std::string RouterOptions::problem() const {
  if (dim <= 0) return "the router's input width must be positive";
  if (num_experts <= 0) return "num_experts must be positive, got " + std::to_string(num_experts);
  if (top_k <= 0 || top_k > num_experts)
    return "top_k (experts per token) must be in [1, num_experts = " + std::to_string(num_experts) + "], got " +
           std::to_string(top_k);
  return {};
}

TokenChoiceRouterImpl::TokenChoiceRouterImpl(const RouterOptions& options) : options_(options) {
  if (const std::string problem = options.problem(); !problem.empty()) throw ft::Error("router: " + problem);
  gate = register_module("gate", Linear(options.dim, options.num_experts, false));
}

Routing TokenChoiceRouterImpl::forward(const at::Tensor& x) const {
  Routing r;
  r.logits = sums_gate_gradient_over ? at::linear(x, ft::copy_to_tensor_parallel(gate->weight, sums_gate_gradient_over))
                                     : gate->forward(x);
  at::Tensor top;
  // Scores in float32 (float64 for a float64 model).
  const auto wide = r.logits.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  if (options_.score == RouterScore::Softmax) {
    std::tie(top, r.experts) = at::topk(at::softmax(r.logits, -1, wide), options_.top_k, -1);
  } else {
    std::tie(top, r.experts) = at::topk(r.logits, options_.top_k, -1);
    top = at::sigmoid(top.to(wide));
  }
  if (options_.normalize_top_k) top = top / top.sum(-1, /*keepdim=*/true);
  r.weights = top;
  return r;
}

}  // namespace ft::nn
