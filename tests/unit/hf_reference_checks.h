// Checks of a model against a reference written by Hugging Face's own modeling code
// (tests/vision_references/): tensors within a relative tolerance, its causal-LM loss, the
// checkpoint's key set, and every parameter's gradient in the checkpoint's layout.
#pragma once

#include <ft/model.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "safetensors.h"

namespace fttest {

// |actual - expected| <= tolerance x max(1, max |expected|), everywhere.
inline void expect_close(const at::Tensor& actual, const at::Tensor& expected, const std::string& what,
                         double tolerance) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  const double scale = std::max(1.0, expected.abs().max().item<double>());
  const double difference = (actual.to(at::kDouble) - expected.to(at::kDouble)).abs().max().item<double>();
  EXPECT_LE(difference, tolerance * scale)
      << what << ": largest difference " << difference << " (values up to " << scale << ")";
}

// Hugging Face's causal LM loss: position i predicts label i + 1, -100 ignored, the mean.
inline at::Tensor hf_causal_lm_loss(const at::Tensor& logits, const at::Tensor& labels) {
  const std::int64_t vocab = logits.size(-1);
  return at::cross_entropy_loss(logits.narrow(1, 0, logits.size(1) - 1).reshape({-1, vocab}),
                                labels.narrow(1, 1, labels.size(1) - 1).reshape({-1}), {}, at::Reduction::Mean, -100);
}

// Every checkpoint tensor is named once, with its shape, and together they are exactly the
// module's parameters.
inline void expect_one_parameter_per_checkpoint_tensor(const std::vector<ft::NamedTensor>& named_tensors,
                                                       const ft_checkpointers::SafetensorsFile& weights,
                                                       const torch::nn::Module& module) {
  std::set<std::string> names;
  std::int64_t elements = 0;
  for (const auto& named : named_tensors) {
    EXPECT_TRUE(names.insert(named.name).second) << named.name << " twice";
    const auto* record = weights.find(named.name);
    ASSERT_NE(record, nullptr) << named.name << " is not in the checkpoint";
    EXPECT_EQ(ft::checkpoint_shape(named), record->shape) << named.name;
    elements += c10::multiply_integers(ft::checkpoint_shape(named));
  }
  EXPECT_EQ(names.size(), weights.records().size());
  std::int64_t parameters = 0;
  for (const auto& p : module.parameters()) parameters += p.numel();
  EXPECT_EQ(elements, parameters) << "a parameter no checkpoint name reaches, or one reached twice";
}

// Each entry's gradient in the checkpoint's layout (the entry with every live tensor's gradient
// in its place) against the reference's "grad.<name>"; a parameter no gradient reached counts as
// zeros. Returns the number of entries compared.
inline int expect_gradients_close(const std::vector<ft::NamedTensor>& named_tensors,
                                  const ft_checkpointers::SafetensorsFile& reference, double tolerance) {
  int compared = 0;
  for (const auto& named : named_tensors) {
    const at::Tensor expected = reference.tensor("grad." + named.name);
    ft::NamedTensor gradients = named;
    bool reached = true;
    if (named.parts.empty()) {
      gradients.tensor = named.tensor.grad();
      reached = gradients.tensor.defined();
    } else {
      for (auto& part : gradients.parts) {
        part = part.grad();
        reached = reached && part.defined();
      }
    }
    expect_close(reached ? ft::checkpoint_value(gradients) : at::zeros_like(expected), expected,
                 "gradient of " + named.name, tolerance);
    ++compared;
  }
  return compared;
}

}  // namespace fttest
