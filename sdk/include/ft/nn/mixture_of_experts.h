// A mixture-of-experts feed-forward block: a token-choice router, grouped experts and, where the
// model has one, a shared expert every token also goes through. Plugs into a TransformerLayer
// where a dense MLP would (FeedForwardBlock).
#pragma once

#include <ft/collectives.h>
#include <ft/nn/feed_forward.h>
#include <ft/nn/feed_forward_block.h>
#include <ft/nn/grouped_experts.h>
#include <ft/nn/token_choice_router.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>

namespace ft::nn {

struct MixtureOfExpertsOptions {
  std::int64_t dim = 0;
  std::int64_t expert_hidden_dim = 0;
  RouterOptions router;
  // Where the routing weight multiplies: the expert's output (Qwen3-MoE, Mixtral) or its input
  // (Llama 4).
  bool weight_expert_inputs = false;
  std::int64_t shared_expert_hidden_dim = 0;  // 0: no shared expert
  MlpActivation activation = MlpActivation::SiLU;

  // Empty when consistent, else what is wrong.
  std::string problem() const;
};

class MixtureOfExpertsImpl final : public FeedForwardBlockImpl {
 public:
  explicit MixtureOfExpertsImpl(const MixtureOfExpertsOptions& options);
  at::Tensor forward(const at::Tensor& x) const override;
  void initialize(const Fill& fill, double stddev, double residual_stddev) override;
  const MixtureOfExpertsOptions& options() const { return options_; }

  TokenChoiceRouter router{nullptr};
  GroupedExperts experts{nullptr};
  std::shared_ptr<FeedForwardImpl> shared_expert;  // nullptr: none

  // Tensor parallelism: the experts' (and shared expert's) hidden features are this rank's slice
  // of this group's, and the block's output is summed over it; nullptr: whole on this rank.
  std::shared_ptr<ft::Collectives> split_over;
  // Expert parallelism: `experts` holds this rank's consecutive share of the layer's experts
  // (ft/nn/expert_parallel.h); each token's rows travel to their experts' ranks and back by
  // all-to-all over this group. nullptr: every expert on this rank.
  std::shared_ptr<ft::Collectives> experts_over;

  // What the last forward routed (read by the model right after its forward, before any
  // recomputation under activation checkpointing runs it again): the router's logits [tokens,
  // experts], and the tokens each expert received [experts] int64.
  mutable at::Tensor last_router_logits;
  mutable at::Tensor last_expert_load;

 private:
  MixtureOfExpertsOptions options_;
};

inline std::shared_ptr<MixtureOfExpertsImpl> mixture_of_experts(const MixtureOfExpertsOptions& options) {
  return std::make_shared<MixtureOfExpertsImpl>(options);
}

}  // namespace ft::nn
