#include <ft/nn/load_balancing_loss.h>

#include <ATen/ATen.h>

namespace ft::nn {

at::Tensor load_balancing_loss(const std::vector<at::Tensor>& router_logits, std::int64_t num_experts,
                               std::int64_t top_k) {
  if (router_logits.empty()) return at::zeros({}, at::kFloat);
  const at::Tensor logits = at::cat(router_logits, 0);
  const at::Tensor probabilities = at::softmax(logits, -1, at::kFloat);
  const at::Tensor chosen = std::get<1>(at::topk(probabilities, top_k, -1));
  // [tokens, k, experts] one-hot: the fraction of each choice slot going to each expert.
  const at::Tensor one_hot = at::one_hot(chosen, num_experts).to(at::kFloat);
  const at::Tensor tokens_per_expert = one_hot.mean(0);             // [k, experts]
  const at::Tensor probability_per_expert = probabilities.mean(0);  // [experts]
  return (tokens_per_expert * probability_per_expert.unsqueeze(0)).sum() * static_cast<double>(num_experts);
}

}  // namespace ft::nn
