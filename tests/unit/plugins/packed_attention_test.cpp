// Attention over packed rows (ft::nn::DocumentLengths): each document of a row must get exactly
// what it gets as a sequence of its own, for every mask kind (causal, sliding window, Llama 4's
// chunks counted from the document's start), with soft-capped scores and grouped key/value
// heads; values and gradients.
#include <ft/nn/attention.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <string>
#include <vector>

namespace {

using namespace ft::nn;

struct MaskCase {
  const char* name;
  AttentionMask mask;
  double softcap;
};

class PackedAttention : public ::testing::TestWithParam<MaskCase> {};

TEST_P(PackedAttention, EachDocumentAttendsAsASequenceOfItsOwn) {
  const MaskCase c = GetParam();
  AttentionOptions o;
  o.embed_dim = 16;
  o.num_heads = 4;
  o.num_kv_heads = 2;
  o.head_dim = 4;
  o.mask = c.mask;
  o.softcap = c.softcap;
  auto attention = std::make_shared<AttentionImpl>(o, AttentionBlocks{});
  at::manual_seed(5);
  {
    at::NoGradGuard no_grad;
    for (auto& p : attention->parameters()) p.normal_(0.0, 0.5);
  }
  const DocumentLengths documents{{5, 4, 3}, {1, 11}, {12}};
  const at::Tensor x = at::randn({3, 12, 16}).requires_grad_(true);
  const at::Tensor upstream = at::randn({3, 12, 16});
  const at::Tensor positions = at::arange(12, at::kLong);

  const at::Tensor packed = attention->forward(x, positions, at::Tensor(), documents);
  std::vector<at::Tensor> rows;
  for (std::size_t i = 0; i < documents.size(); ++i) {
    std::vector<at::Tensor> alone;
    std::int64_t start = 0;
    for (const std::int64_t length : documents[i]) {
      const at::Tensor document = x.narrow(0, static_cast<std::int64_t>(i), 1).narrow(1, start, length);
      alone.push_back(attention->forward(document, at::arange(length, at::kLong), at::Tensor()));
      start += length;
    }
    rows.push_back(at::cat(alone, 1));
  }
  const at::Tensor expected = at::cat(rows, 0);
  EXPECT_TRUE(at::allclose(packed, expected, 1e-5, 1e-6)) << (packed - expected).abs().max();

  std::vector<at::Tensor> inputs = attention->parameters();
  inputs.push_back(x);
  const auto got = torch::autograd::grad({(packed * upstream).sum()}, inputs);
  const auto want = torch::autograd::grad({(expected * upstream).sum()}, inputs);
  for (std::size_t i = 0; i < inputs.size(); ++i)
    EXPECT_TRUE(at::allclose(got[i], want[i], 1e-4, 1e-5)) << "input " << i << ": " << (got[i] - want[i]).abs().max();
}

INSTANTIATE_TEST_SUITE_P(Masks, PackedAttention,
                         ::testing::Values(MaskCase{"causal", AttentionMask::causal(), 0},
                                           MaskCase{"sliding_window", AttentionMask::sliding_window(3), 0},
                                           MaskCase{"chunked_local", AttentionMask::chunked_local(4), 0},
                                           MaskCase{"soft_capped_window", AttentionMask::sliding_window(3), 2.5}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(PackedAttention, LengthsThatDoNotCoverTheRowAreRefused) {
  AttentionOptions o;
  o.embed_dim = 8;
  o.num_heads = 2;
  o.num_kv_heads = 2;
  o.head_dim = 4;
  auto attention = std::make_shared<AttentionImpl>(o, AttentionBlocks{});
  const at::Tensor x = at::randn({1, 6, 8});
  try {
    attention->forward(x, at::arange(6, at::kLong), at::Tensor(), DocumentLengths{{2, 3}});
    FAIL() << "lengths summing to 5 of 6 positions were accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("row 0's document lengths do not sum to its 6 positions"), std::string::npos)
        << e.what();
  }
}

}  // namespace
