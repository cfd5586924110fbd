// The Megatron tensor-parallel plan every decoder in plugins/models splits by: q/k/v, w1/w3 and
// output colwise; output_proj, w2 and tok_embeddings rowwise. A family registers it under the
// name torchtune gives its plan (ft/tensor_parallel.h).
//
// The training plan lists the sequence-parallel entries of torchtune's (norms, the attention and
// MLP inputs): fthost keeps those activations whole on every rank, so the layers communicate by
// one all-reduce each way instead of a reduce-scatter and an all-gather, with the same values.
#pragma once

#include <ft/registry.h>
#include <ft/tensor_parallel.h>

#include <string>
#include <vector>

namespace ft_models {

// A plan of fixed entries.
class FixedPlan final : public ft::TensorParallelPlan {
 public:
  explicit FixedPlan(std::vector<ft::ModuleParallelism> modules) : modules_(std::move(modules)) {}
  std::vector<ft::ModuleParallelism> modules() const override { return modules_; }

 private:
  std::vector<ft::ModuleParallelism> modules_;
};

void register_megatron_plan(ft::Registry& reg, const std::string& component, const std::string& summary);

// The plan of a decoder with mixture-of-experts layers (torchtune's Llama 4 decoder_only_tp_plan):
// attention and dense MLPs as above, the output colwise, the embedding whole; a sparse layer's
// router.gate whole on every rank (no_parallel), its experts' hidden features split
// (expert_tensor_parallel) and its shared expert split like a dense MLP.
void register_expert_plan(ft::Registry& reg, const std::string& component, const std::string& summary);

}  // namespace ft_models
