// Ring attention under context parallelism on the CPU, ranks as threads, against attention over
// the whole sequence (ring_attention_check.h: every mask kind, grouped and multi-query heads,
// soft caps, packed documents, both rotate methods, 2 and 3 ranks); and the load-balanced split.
#include "ring_attention_check.h"

#include <ft/context_parallel_layout.h>
#include <ft/errors.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace {

class RingAttention : public ::testing::TestWithParam<fttest::ring::RingCase> {};

TEST_P(RingAttention, EachRankGetsWhatAttentionOverTheWholeSequenceGivesAtItsPositions) {
  fttest::ring::expect_ring_attention_matches(GetParam(), at::Device(at::kCPU));
}

INSTANTIATE_TEST_SUITE_P(MaskKinds, RingAttention, ::testing::ValuesIn(fttest::ring::ring_attention_cases()),
                         [](const auto& param_info) { return param_info.param.name; });

TEST(LoadBalancedIndices, EachRankHoldsAnEarlyAndALateChunkAndTogetherTheyHoldEveryPosition) {
  // 3 ranks, 6 chunks of 2: rank 0 holds chunks 0 and 5, rank 1 chunks 1 and 4, rank 2 chunks 2 and 3.
  EXPECT_TRUE(ft::load_balanced_indices(12, 3, 0).equal(at::tensor({0, 1, 10, 11}, at::kLong)));
  EXPECT_TRUE(ft::load_balanced_indices(12, 3, 1).equal(at::tensor({2, 3, 8, 9}, at::kLong)));
  EXPECT_TRUE(ft::load_balanced_indices(12, 3, 2).equal(at::tensor({4, 5, 6, 7}, at::kLong)));
  EXPECT_THROW(ft::load_balanced_indices(10, 3, 0), ft::Error);
}

}  // namespace
