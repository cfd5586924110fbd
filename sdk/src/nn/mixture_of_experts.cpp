#include <ft/errors.h>
#include <ft/nn/expert_parallel.h>
#include <ft/nn/mixture_of_experts.h>
#include <ft/tensor_parallel.h>

#include <ATen/ATen.h>

namespace ft::nn {

std::string MixtureOfExpertsOptions::problem() const {
  if (dim <= 0 || expert_hidden_dim <= 0) return "the experts' widths must be positive";
  if (router.dim != dim) return "the router's input width differs from the layer's";
  if (shared_expert_hidden_dim < 0) return "the shared expert's width must not be negative";
  return router.problem();
}

MixtureOfExpertsImpl::MixtureOfExpertsImpl(const MixtureOfExpertsOptions& options) : options_(options) {
  if (const std::string problem = options.problem(); !problem.empty())
    throw ft::Error("mixture of experts: " + problem);
  router = register_module("router", TokenChoiceRouter(options.router));
  experts = register_module("experts", GroupedExperts(options.router.num_experts, options.dim,
                                                      options.expert_hidden_dim, options.activation));
  if (options.shared_expert_hidden_dim > 0)
    shared_expert = register_module("shared_expert",
                                    feed_forward(options.dim, options.shared_expert_hidden_dim, options.activation));
}

at::Tensor MixtureOfExpertsImpl::forward(const at::Tensor& x) const {
  const std::int64_t dim = x.size(-1);
  const at::Tensor tokens = x.reshape({-1, dim});
  const Routing routing = router->forward(tokens);
  const std::int64_t k = options_.router.top_k;
  // Every (token, choice) pair as one row, grouped by expert: a stable sort keeps each expert's
  // tokens in sequence order.
  const at::Tensor chosen = routing.experts.reshape({-1});
  const at::Tensor order = at::argsort(chosen, /*stable=*/true);
  const at::Tensor token_of_row = at::floor_divide(order, k);
  const at::Tensor rows_per_expert = at::bincount(chosen, {}, options_.router.num_experts);
  const at::Tensor row_weights = routing.weights.reshape({-1}).index_select(0, order).to(x.scalar_type()).unsqueeze(1);
  at::Tensor rows = tokens.index_select(0, token_of_row);
  if (options_.weight_expert_inputs) rows = rows * row_weights;
  at::Tensor out_rows = experts_over ? run_on_expert_ranks(*experts, rows, rows_per_expert, experts_over)
                                     : experts->forward(rows, rows_per_expert);
  if (!options_.weight_expert_inputs) out_rows = out_rows * row_weights;
  at::Tensor out = at::zeros_like(tokens).index_add(0, token_of_row, out_rows);
  if (shared_expert) out = out + shared_expert->forward(tokens);
  if (split_over) out = ft::reduce_from_tensor_parallel(out, split_over);
  last_router_logits = routing.logits;
  last_expert_load = rows_per_expert.detach();
  return out.view(x.sizes());
}

void MixtureOfExpertsImpl::initialize(const Fill& fill, double stddev, double residual_stddev) {
  fill(router->gate->weight, stddev);
  fill(experts->w1, stddev);
  fill(experts->w3, stddev);
  fill(experts->w2, residual_stddev);
  if (shared_expert) shared_expert->initialize(fill, stddev, residual_stddev);
}

}  // namespace ft::nn
