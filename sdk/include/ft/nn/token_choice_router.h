// Which experts each token goes to in a mixture-of-experts layer: a linear gate scores every
// expert, each token picks its top k, and the picks are weighted. Scores are computed in float32.
#pragma once

#include <ft/collectives.h>
#include <ft/nn/linear.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <memory>
#include <string>

namespace ft::nn {

enum class RouterScore {
  // softmax over all experts' logits, then the top k (Qwen3-MoE, Mixtral)
  Softmax,
  // the top k logits, each through a sigmoid (Llama 4)
  SigmoidOfTopK,
};

struct RouterOptions {
  std::int64_t dim = 0;
  std::int64_t num_experts = 0;
  std::int64_t top_k = 0;
  RouterScore score = RouterScore::Softmax;
  bool normalize_top_k = false;  // the k weights divided by their sum (norm_topk_prob; Mixtral always)

  // Empty when consistent, else what is wrong.
  std::string problem() const;
};

struct Routing {
  at::Tensor logits;   // [tokens, experts], the gate's dtype
  at::Tensor weights;  // [tokens, k] float32
  at::Tensor experts;  // [tokens, k] int64, each token's chosen experts
};

class TokenChoiceRouterImpl : public torch::nn::Module {
 public:
  explicit TokenChoiceRouterImpl(const RouterOptions& options);
  // x: [tokens, dim].
  Routing forward(const at::Tensor& x) const;
  const RouterOptions& options() const { return options_; }
  Linear gate{nullptr};  // [experts, dim], no bias
  // Tensor parallelism: the gate is whole on every rank, but each rank's experts contribute only
  // part of the routing weights' gradient, so the gate's gradient is summed over this group.
  std::shared_ptr<ft::Collectives> sums_gate_gradient_over;

 private:
  RouterOptions options_;
};
TORCH_MODULE(TokenChoiceRouter);

}  // namespace ft::nn
