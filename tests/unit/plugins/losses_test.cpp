// ft_losses through the registry: options the losses do not implement are refused by key, and
// the three cross-entropy losses give the same sum as LibTorch's own
// torch::nn::functional::cross_entropy (ignore_index -100) on the same logits.
#include "builtin_plugins.h"
#include "tiny_llama.h"

#include <ft/loss.h>
#include <ft/model.h>

#include <torch/torch.h>

#include <cmath>

namespace {

class Losses : public fttest::BuiltinPluginsTest {
 protected:
  static std::string loss_error(const std::string& text) {
    auto cfg = root(text);
    return fttest::error_of([&] { registry().instantiate<ft::Loss>(cfg.table("loss")); });
  }
};

// A batch of token ids with the default positions (0..s-1) and causal mask.
ft::ModelInput tokens_only(torch::Tensor tokens) {
  ft::ModelInput input;
  input.tokens = std::move(tokens);
  return input;
}

TEST_F(Losses, LossesRefuseWhatTheyDoNotImplement) {
  EXPECT_NE(
      loss_error("[loss]\n_component_ = \"torch.nn.CrossEntropyLoss\"\nreduction = \"sum\"\n").find("loss.reduction"),
      std::string::npos);
  EXPECT_NE(loss_error("[loss]\n_component_ = \"torch.nn.CrossEntropyLoss\"\nlabel_smoothing = 0.1\n")
                .find("label smoothing is not supported"),
            std::string::npos);
  EXPECT_NE(
      loss_error("[loss]\n_component_ = \"torchtune.modules.loss.CEWithChunkedOutputLoss\"\nnum_output_chunks = 0\n")
          .find("must be at least 1, got 0"),
      std::string::npos);
}

// The three losses are the same sum: chunking and skipping ignored positions change memory, not values.
TEST_F(Losses, LossesAgreeOnTheSameOutput) {
  auto model = registry().instantiate<ft::Model>(root(fttest::kTinyLlamaConfig).table("model"));
  auto tokens = torch::randint(0, 64, {2, 9}, torch::kLong);
  auto targets = torch::randint(0, 64, {2, 9}, torch::kLong);
  targets.index_put_({0, torch::indexing::Slice(0, 4)}, -100);
  std::vector<double> sums;
  for (const char* name : {"torch.nn.CrossEntropyLoss", "torchtune.modules.loss.CEWithChunkedOutputLoss",
                           "torchtune.modules.loss.LinearCrossEntropyLoss"}) {
    auto loss =
        registry().instantiate<ft::Loss>(root(std::string("[loss]\n_component_ = \"") + name + "\"\n").table("loss"));
    auto out = model->forward(tokens_only(tokens), loss->output_request());
    sums.push_back(loss->sum(out, targets, *model).item<double>());
  }
  // Reference: the mean cross-entropy over the 14 kept targets, times 14.
  auto logits = model->forward(tokens_only(tokens)).logits[0];
  const double reference =
      torch::nn::functional::cross_entropy(logits.reshape({-1, 64}), targets.reshape({-1}),
                                           torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100))
          .item<double>() *
      14.0;
  for (double s : sums) EXPECT_NEAR(s, reference, 1e-4 * std::abs(reference));
}

}  // namespace
