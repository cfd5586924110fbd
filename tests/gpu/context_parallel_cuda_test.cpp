// Ring attention on CUDA tensors (the memory-efficient kernel with its log-sum-exp, behind
// ft/torch_compat.h), ranks as threads, against attention over the whole sequence in float64 on
// the CPU: the cases of the CPU suite (ring_attention_check.h).
#include "ring_attention_check.h"

#include <ft/torch_compat.h>

#include <gtest/gtest.h>

namespace {

class RingAttentionCuda : public ::testing::TestWithParam<fttest::ring::RingCase> {};

TEST_P(RingAttentionCuda, EachRankGetsWhatAttentionOverTheWholeSequenceGivesAtItsPositions) {
  ASSERT_GT(ft::compat::cuda_device_count(), 0) << "no CUDA device";
  fttest::ring::expect_ring_attention_matches(GetParam(), at::Device(at::kCUDA, 0));
}

INSTANTIATE_TEST_SUITE_P(MaskKinds, RingAttentionCuda, ::testing::ValuesIn(fttest::ring::ring_attention_cases()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
