// The mixture-of-experts blocks (ft/nn/mixture_of_experts.h) against their definitions written
// token by token with plain ATen ops: each token's router scores, its top k experts, each
// chosen expert's gated MLP on that token alone, weighted and summed. Values and gradients must
// agree; the grouped GEMM against one matmul per group; the load-balancing loss against a hand
// computation of Hugging Face's formula; the Llama 4 checkpoint layout must round-trip; and the
// logged expert load is its extremes and its worst layer's coefficient of variation. Under expert
// parallelism (ranks as threads), two ranks holding half of the experts each compute what one
// rank holding all of them computes.
#include "thread_ranks.h"
#include "train/expert_load_metrics.h"

#include <ft/collectives.h>
#include <ft/model.h>
#include <ft/nn/load_balancing_loss.h>
#include <ft/nn/mixture_of_experts.h>
#include <ft_kernels/grouped_mm.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <thread>
#include <vector>

namespace {

using namespace ft::nn;
using fttest::ThreadRank;
using fttest::ThreadRanks;

double relative_difference(const at::Tensor& got, const at::Tensor& want) {
  const at::Tensor g = got.to(at::kDouble), w = want.to(at::kDouble);
  return (g - w).abs().max().item<double>() / std::max(w.abs().max().item<double>(), 1e-30);
}

void fill_randomly(torch::nn::Module& module, std::uint64_t seed) {
  at::NoGradGuard no_grad;
  at::Generator gen = at::detail::createCPUGenerator(seed);
  for (auto& p : module.parameters()) p.normal_(0.0, 0.3, gen);
}

// The block's definition, one token at a time.
at::Tensor reference_forward(const MixtureOfExpertsImpl& moe, const at::Tensor& x) {
  const auto& o = moe.options();
  const at::Tensor tokens = x.reshape({-1, x.size(-1)});
  std::vector<at::Tensor> rows;
  for (std::int64_t t = 0; t < tokens.size(0); ++t) {
    const at::Tensor token = tokens[t];
    const at::Tensor logits = at::mv(moe.router->gate->weight, token);
    at::Tensor out = at::zeros_like(token);
    const auto picked = at::topk(logits, o.router.top_k);
    at::Tensor weights = o.router.score == RouterScore::Softmax
                             ? at::softmax(logits, 0).index_select(0, std::get<1>(picked))
                             : at::sigmoid(std::get<0>(picked));
    if (o.router.normalize_top_k) weights = weights / weights.sum();
    for (std::int64_t j = 0; j < o.router.top_k; ++j) {
      const std::int64_t e = std::get<1>(picked)[j].item<std::int64_t>();
      const at::Tensor in = o.weight_expert_inputs ? token * weights[j] : token;
      const at::Tensor hidden = at::silu(at::mv(moe.experts->w1[e], in)) * at::mv(moe.experts->w3[e], in);
      const at::Tensor expert_out = at::mv(moe.experts->w2[e], hidden);
      out = out + (o.weight_expert_inputs ? expert_out : expert_out * weights[j]);
    }
    if (moe.shared_expert) {
      const auto& s = *moe.shared_expert;
      out = out + at::mv(s.w2->weight, at::silu(at::mv(s.w1->weight, token)) * at::mv(s.w3->weight, token));
    }
    rows.push_back(out);
  }
  return at::stack(rows).view(x.sizes());
}

struct Variant {
  const char* name;
  RouterScore score;
  bool normalize;
  bool weight_inputs;
  std::int64_t shared;
  std::int64_t experts, top_k;
};

// A block of width 12 with experts of width 20, routed as `v` says.
MixtureOfExpertsOptions block_options(const Variant& v) {
  MixtureOfExpertsOptions o;
  o.dim = 12;
  o.expert_hidden_dim = 20;
  o.router = {12, v.experts, v.top_k, v.score, v.normalize};
  o.weight_expert_inputs = v.weight_inputs;
  o.shared_expert_hidden_dim = v.shared;
  return o;
}

class MixtureOfExpertsDefinition : public ::testing::TestWithParam<Variant> {};

TEST_P(MixtureOfExpertsDefinition, ValuesAndGradientsMatchTheTokenByTokenDefinition) {
  const Variant v = GetParam();
  const MixtureOfExpertsOptions o = block_options(v);
  auto moe = mixture_of_experts(o);
  fill_randomly(*moe, 7);
  const at::Tensor x = at::randn({3, 9, 12}, at::TensorOptions().dtype(at::kFloat));
  const at::Tensor upstream = at::randn({3, 9, 12});

  const at::Tensor got = moe->forward(x);
  const at::Tensor want = reference_forward(*moe, x);
  EXPECT_LT(relative_difference(got, want), 1e-5);
  const auto params = moe->parameters();
  const auto got_grads = torch::autograd::grad({(got * upstream).sum()}, params);
  const auto want_grads = torch::autograd::grad({(want * upstream).sum()}, params);
  for (std::size_t i = 0; i < params.size(); ++i)
    EXPECT_LT(relative_difference(got_grads[i], want_grads[i]), 1e-5) << "parameter " << i;
  // Every token chose top_k experts; the load counts each choice once.
  EXPECT_EQ(moe->last_expert_load.sum().item<std::int64_t>(), 27 * v.top_k);
  EXPECT_EQ(moe->last_router_logits.sizes(), (std::vector<std::int64_t>{27, v.experts}));
}

INSTANTIATE_TEST_SUITE_P(
    Routers, MixtureOfExpertsDefinition,
    ::testing::Values(Variant{"qwen3_moe_softmax_normalised", RouterScore::Softmax, true, false, 0, 6, 2},
                      Variant{"qwen3_moe_softmax", RouterScore::Softmax, false, false, 0, 6, 3},
                      Variant{"llama4_sigmoid_inputs_shared", RouterScore::SigmoidOfTopK, false, true, 16, 4, 1},
                      Variant{"every_expert", RouterScore::Softmax, true, false, 0, 3, 3}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

class ExpertParallelBlock : public ::testing::TestWithParam<Variant> {};

TEST_P(ExpertParallelBlock, TwoRanksWithHalfTheExpertsEachComputeWhatOneRankWithAllComputes) {
  const Variant v = GetParam();
  const MixtureOfExpertsOptions o = block_options(v);
  const int ranks = 2;
  std::vector<at::Tensor> inputs, upstreams;
  for (int r = 0; r < ranks; ++r) {
    // Unequal token counts: the ranks send each other different numbers of rows.
    inputs.push_back(at::randn({2, 7 + 4 * r, 12}));
    upstreams.push_back(at::randn({2, 7 + 4 * r, 12}));
  }

  // One rank with every expert, both ranks' tokens.
  auto whole = mixture_of_experts(o);
  fill_randomly(*whole, 11);
  std::vector<at::Tensor> want_outputs;
  at::Tensor objective = at::zeros({});
  for (int r = 0; r < ranks; ++r) {
    want_outputs.push_back(whole->forward(inputs[r]));
    objective = objective + (want_outputs[r] * upstreams[r]).sum();
  }
  const auto names = whole->named_parameters();
  const auto want_grads = torch::autograd::grad({objective}, whole->parameters());

  ThreadRanks mesh(ranks);
  std::vector<at::Tensor> got_outputs(ranks);
  std::vector<std::vector<at::Tensor>> got_grads(ranks);
  std::vector<at::Tensor> expert_loads(ranks);
  auto rank_main = [&](int r) {
    auto moe = mixture_of_experts(o);
    fill_randomly(*moe, 11);
    {
      at::NoGradGuard no_grad;
      const std::int64_t local = v.experts / ranks;
      for (at::Tensor* w : {&moe->experts->w1, &moe->experts->w2, &moe->experts->w3})
        w->set_data(w->detach().narrow(0, r * local, local).clone());
    }
    moe->experts_over = std::make_shared<ThreadRank>(mesh, r);
    got_outputs[r] = moe->forward(inputs[r]);
    expert_loads[r] = moe->last_expert_load;
    got_grads[r] = torch::autograd::grad({(got_outputs[r] * upstreams[r]).sum()}, moe->parameters());
  };
  std::thread other(rank_main, 1);
  rank_main(0);
  other.join();

  for (int r = 0; r < ranks; ++r) {
    EXPECT_LT(relative_difference(got_outputs[r], want_outputs[r]), 1e-5) << "rank " << r;
    // The load is over every expert of the layer, counted where the tokens were routed.
    EXPECT_EQ(expert_loads[r].numel(), v.experts);
    EXPECT_EQ(expert_loads[r].sum().item<std::int64_t>(), inputs[r].size(0) * inputs[r].size(1) * v.top_k);
  }
  const std::int64_t local = v.experts / ranks;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i].key();
    if (name.rfind("experts.", 0) == 0) {
      // An expert's gradient, whole on the rank holding it: every rank's tokens reached it.
      for (int r = 0; r < ranks; ++r)
        EXPECT_LT(relative_difference(got_grads[r][i], want_grads[i].narrow(0, r * local, local)), 1e-5)
            << name << " on rank " << r;
    } else {
      // Replicated: each rank's gradient is its own tokens'; data parallelism sums them.
      EXPECT_LT(relative_difference(got_grads[0][i] + got_grads[1][i], want_grads[i]), 1e-5) << name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Routers, ExpertParallelBlock,
    ::testing::Values(Variant{"qwen3_moe_softmax_normalised", RouterScore::Softmax, true, false, 0, 6, 2},
                      Variant{"llama4_sigmoid_inputs_shared", RouterScore::SigmoidOfTopK, false, true, 16, 4, 1}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(GroupedMm, EqualsOneMatmulPerGroupWithEmptyGroups) {
  const std::vector<std::int64_t> sizes{3, 0, 5, 1, 0};
  const at::Tensor x = at::randn({9, 7}).requires_grad_(true);
  const at::Tensor w = at::randn({5, 4, 7}).requires_grad_(true);
  const at::Tensor upstream = at::randn({9, 4});
  const at::Tensor got = ft_kernels::grouped_mm(x, w, at::tensor(sizes));
  std::vector<at::Tensor> blocks;
  std::int64_t row = 0;
  for (std::size_t g = 0; g < sizes.size(); ++g) {
    blocks.push_back(at::mm(x.narrow(0, row, sizes[g]), w[static_cast<std::int64_t>(g)].t()));
    row += sizes[g];
  }
  const at::Tensor want = at::cat(blocks);
  EXPECT_LT(relative_difference(got, want), 1e-6);
  const auto got_grads = torch::autograd::grad({(got * upstream).sum()}, {x, w});
  const auto want_grads = torch::autograd::grad({(want * upstream).sum()}, {x, w});
  EXPECT_LT(relative_difference(got_grads[0], want_grads[0]), 1e-6);
  EXPECT_LT(relative_difference(got_grads[1], want_grads[1]), 1e-6);
  EXPECT_EQ(got_grads[1][1].abs().max().item<float>(), 0.0f);  // an expert with no rows gets a zero gradient
}

TEST(GroupedMm, RefusesOperandsThatDoNotFit) {
  EXPECT_THROW(ft_kernels::grouped_mm(at::randn({4, 3}), at::randn({2, 5, 4}), at::tensor({2, 2})), ft::Error);
  EXPECT_THROW(ft_kernels::grouped_mm(at::randn({4, 3}), at::randn({2, 5, 3}), at::tensor({4})), ft::Error);
}

// Hugging Face's load_balancing_loss_func for two layers of two tokens over three experts, top 1:
// the fraction of choices per expert times its mean probability, summed, times the experts.
TEST(LoadBalancingLoss, IsHuggingFacesFormulaOverEveryLayerTogether) {
  const at::Tensor layer0 = at::tensor({2.0, 0.0, 0.0, 0.0, 1.0, 0.0}, at::kFloat).view({2, 3});
  const at::Tensor layer1 = at::tensor({0.0, 0.0, 3.0, 1.0, 0.0, 0.0}, at::kFloat).view({2, 3});
  const double e = std::exp(1.0), e2 = std::exp(2.0), e3 = std::exp(3.0);
  // Softmax rows: [e2,1,1]/(e2+2), [1,e,1]/(e+2), [1,1,e3]/(e3+2), [e,1,1]/(e+2); choices 0,1,2,0.
  const double p0 = (e2 / (e2 + 2) + 1 / (e + 2) + 1 / (e3 + 2) + e / (e + 2)) / 4;
  const double p1 = (1 / (e2 + 2) + e / (e + 2) + 1 / (e3 + 2) + 1 / (e + 2)) / 4;
  const double p2 = (1 / (e2 + 2) + 1 / (e + 2) + e3 / (e3 + 2) + 1 / (e + 2)) / 4;
  const double want = 3 * (0.5 * p0 + 0.25 * p1 + 0.25 * p2);
  EXPECT_NEAR(load_balancing_loss({layer0, layer1}, 3, 1).item<double>(), want, 1e-6);
}

// Llama 4 stores experts as [experts, dim, 2 * hidden] (gate then up) and [experts, hidden,
// dim]; the live parameters are [experts, hidden, dim] and [experts, dim, hidden].
TEST(CheckpointLayout, TransposedAndConcatenatedEntriesRoundTrip) {
  const at::Tensor w1 = at::randn({3, 5, 4}), w3 = at::randn({3, 5, 4});
  ft::NamedTensor gate_up("experts.gate_up_proj", at::Tensor(), {w1, w3}, 1);
  const auto swap = [](const at::Tensor& t) { return t.transpose(-2, -1); };
  gate_up.to_checkpoint = swap;
  gate_up.from_checkpoint = swap;
  EXPECT_EQ(ft::checkpoint_shape(gate_up), (std::vector<std::int64_t>{3, 4, 10}));
  const at::Tensor stored = ft::checkpoint_value(gate_up);
  EXPECT_TRUE(stored.is_contiguous());
  EXPECT_TRUE(at::equal(stored.narrow(2, 0, 5), w1.transpose(1, 2)));
  EXPECT_TRUE(at::equal(stored.narrow(2, 5, 5), w3.transpose(1, 2)));
  const at::Tensor w1_before = w1.clone(), w3_before = w3.clone();
  w1.zero_();
  w3.zero_();
  ft::assign_checkpoint_value(gate_up, stored);
  EXPECT_TRUE(at::equal(w1, w1_before));
  EXPECT_TRUE(at::equal(w3, w3_before));
  EXPECT_THROW(ft::assign_checkpoint_value(gate_up, at::zeros({3, 10, 4})), ft::Error);
}

// The logged load: the fewest and most token choices of any expert over every sparse layer, and
// the worst layer's std / mean (population std: the experts are all there are).
TEST(ExpertLoadMetrics, AreTheExtremesAndTheWorstLayersCoefficientOfVariation) {
  const auto metrics = fthost::expert_load_metrics(at::tensor({3.0, 1.0, 2.0, 2.0}).view({2, 2}));
  ASSERT_EQ(metrics.size(), 3u);
  EXPECT_EQ(metrics[0], (std::pair<std::string, double>{"expert_tokens_min", 1.0}));
  EXPECT_EQ(metrics[1], (std::pair<std::string, double>{"expert_tokens_max", 3.0}));
  EXPECT_EQ(metrics[2].first, "expert_load_cv");
  EXPECT_DOUBLE_EQ(metrics[2].second, 0.5);  // layer 0: mean 2, std 1; layer 1 balanced
  // A layer no token reached (all experts 0) is balanced, not a division by zero.
  EXPECT_DOUBLE_EQ(fthost::expert_load_metrics(at::zeros({1, 4}))[2].second, 0.0);
}

}  // namespace
