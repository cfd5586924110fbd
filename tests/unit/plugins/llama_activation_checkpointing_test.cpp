// The Llama model's activation checkpointing: the layers it is told to checkpoint leave one
// autograd node each instead of their own graphs, and its gradients stay exactly those of the
// model without checkpointing.
#include "autograd_graph.h"
#include "builtin_plugins.h"
#include "tiny_llama.h"

#include <ft/model.h>
#include <ft/model_layer_checkpointing.h>

#include <torch/torch.h>

#include <set>

namespace {

class LlamaActivationCheckpointing : public fttest::BuiltinPluginsTest {
 protected:
  static std::shared_ptr<ft::Model> two_layer_model() {
    std::string config = fttest::kTinyLlamaConfig;
    config.replace(config.find("num_layers = 1"), 14, "num_layers = 2");
    return registry().instantiate<ft::Model>(root(config).table("model"), {c10::kFloat, c10::kCPU, 7});
  }
};

using fttest::graph_size;

struct Result {
  std::size_t graph_nodes;
  std::vector<at::Tensor> gradients;
};

Result train_once(ft::Model& model) {
  for (auto& p : model.module().parameters()) p.mutable_grad() = at::Tensor();
  ft::ModelInput input;
  input.tokens = torch::arange(12, torch::kLong).remainder(64).view({2, 6});
  const at::Tensor loss = model.forward(input).logits.at(0).square().mean();
  Result r{graph_size(loss.grad_fn()), {}};
  loss.backward();
  for (auto& p : model.module().parameters()) r.gradients.push_back(p.grad().clone());
  return r;
}

TEST_F(LlamaActivationCheckpointing, CheckpointedLayersKeepOneNodeAndTheSameGradients) {
  auto model = two_layer_model();
  auto* checkpointing = ft::role_of<ft::ModelLayerCheckpointing>(*model);
  ASSERT_NE(checkpointing, nullptr);
  EXPECT_EQ(checkpointing->num_checkpointable_layers(), 2);
  const Result plain = train_once(*model);
  checkpointing->set_activation_checkpointing({true, false});
  const Result first_only = train_once(*model);
  checkpointing->set_activation_checkpointing({true, true});
  const Result both = train_once(*model);

  // A layer has about twenty nodes of its own (norms, projections, rotary, attention, MLP);
  // checkpointed, it is one.
  EXPECT_LT(first_only.graph_nodes + 10, plain.graph_nodes);
  EXPECT_LT(both.graph_nodes + 10, first_only.graph_nodes);
  ASSERT_EQ(plain.gradients.size(), both.gradients.size());
  for (std::size_t i = 0; i < plain.gradients.size(); ++i) {
    EXPECT_TRUE(at::equal(plain.gradients[i], first_only.gradients[i])) << "parameter " << i;
    EXPECT_TRUE(at::equal(plain.gradients[i], both.gradients[i])) << "parameter " << i;
  }
  EXPECT_NE(fttest::error_of([&] {
              checkpointing->set_activation_checkpointing({true});
            }).find("1 layer flags for a model of 2"),
            std::string::npos);
}

}  // namespace
