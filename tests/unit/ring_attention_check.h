// Ring attention under context parallelism (ft/nn/context_parallel.h) checked on ranks as
// threads: every rank holds two load-balanced chunks of the sequence, and its outputs and the
// gradients of its queries, keys and values must be what attention over the whole sequence gives
// at its positions. The reference is attention written out with plain ATen ops in float64 on the
// CPU: scores, soft cap, the mask from each position's document and index, softmax, values.
// Shared by the CPU suite (tests/unit/plugins) and the GPU suite (tests/gpu).
#pragma once

#include "thread_ranks.h"

#include <ft/context_parallel_layout.h>
#include <ft/errors.h>
#include <ft/nn/context_parallel.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <limits>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

namespace fttest::ring {

using ft::nn::AttentionMask;
using ft::nn::AttentionScores;
using ft::nn::ContextParallel;
using ft::nn::DocumentLengths;
using ft::nn::RotateMethod;

struct RingCase {
  std::string name;
  AttentionMask mask;
  std::int64_t heads, kv_heads;
  double softcap;
  DocumentLengths documents;  // of the whole rows; empty: one sequence per row
  RotateMethod rotate;
  int ranks;
};

inline void PrintTo(const RingCase& c, std::ostream* os) { *os << c.name; }

constexpr std::int64_t kRows = 2, kHeadDim = 8;

// Which key each query may see, written from the definitions: a key of the same document, not
// after the query, within the window or the same chunk where the kind says so.
inline at::Tensor allowed_keys(const RingCase& c, std::int64_t seq_len) {
  at::Tensor allowed = at::zeros({kRows, seq_len, seq_len}, at::kBool);
  for (std::int64_t row = 0; row < kRows; ++row) {
    std::vector<std::int64_t> document(static_cast<std::size_t>(seq_len), 0), start(document);
    if (!c.documents.empty()) {
      std::int64_t at_position = 0, id = 0;
      for (const std::int64_t length : c.documents[static_cast<std::size_t>(row)]) {
        for (std::int64_t i = 0; i < length; ++i) {
          document[static_cast<std::size_t>(at_position + i)] = id;
          start[static_cast<std::size_t>(at_position + i)] = at_position;
        }
        at_position += length;
        ++id;
      }
    }
    for (std::int64_t q = 0; q < seq_len; ++q)
      for (std::int64_t k = 0; k <= q; ++k) {
        const auto qi = static_cast<std::size_t>(q), ki = static_cast<std::size_t>(k);
        if (document[qi] != document[ki]) continue;
        const std::int64_t qp = q - start[qi], kp = k - start[ki];
        bool ok = true;
        if (c.mask.kind == AttentionMask::Kind::SlidingWindow) ok = qp - kp < c.mask.size;
        if (c.mask.kind == AttentionMask::Kind::ChunkedLocal) ok = qp / c.mask.size == kp / c.mask.size;
        allowed[row][q][k] = ok;
      }
  }
  return allowed;
}

inline at::Tensor reference_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const at::Tensor& allowed, double softcap) {
  const std::int64_t group = q.size(1) / k.size(1);
  at::Tensor scores = at::matmul(q, k.repeat_interleave(group, 1).transpose(-1, -2)) / std::sqrt(double(kHeadDim));
  if (softcap > 0) scores = at::tanh(scores / softcap) * softcap;
  scores = scores.masked_fill(allowed.unsqueeze(1).logical_not(), -std::numeric_limits<double>::infinity());
  return at::matmul(at::softmax(scores, -1), v.repeat_interleave(group, 1));
}

inline double relative_difference(const at::Tensor& got, const at::Tensor& want) {
  return (got.to(at::kDouble) - want).abs().max().item<double>() / std::max(want.abs().max().item<double>(), 1e-12);
}

// Runs `c` with every rank's tensors on `device` and expects each rank's outputs and gradients
// within 2e-5 (relative to the largest) of the reference.
inline void expect_ring_attention_matches(const RingCase& c, const at::Device& device) {
  const std::int64_t seq_len = 2 * c.ranks * 6;  // chunks of 6 positions
  at::manual_seed(3);
  const at::Tensor q = at::randn({kRows, c.heads, seq_len, kHeadDim}, at::kDouble);
  const at::Tensor k = at::randn({kRows, c.kv_heads, seq_len, kHeadDim}, at::kDouble);
  const at::Tensor v = at::randn({kRows, c.kv_heads, seq_len, kHeadDim}, at::kDouble);
  const at::Tensor upstream = at::randn({kRows, c.heads, seq_len, kHeadDim}, at::kDouble);
  const at::Tensor allowed = allowed_keys(c, seq_len);
  ASSERT_TRUE(allowed.any(-1).all().item<bool>());  // every query sees at least itself

  const at::Tensor wq = q.clone().requires_grad_(), wk = k.clone().requires_grad_(), wv = v.clone().requires_grad_();
  const at::Tensor want = reference_attention(wq, wk, wv, allowed, c.softcap);
  const auto want_grads = torch::autograd::grad({(want * upstream).sum()}, {wq, wk, wv});

  AttentionScores scores;
  scores.scale = 1.0 / std::sqrt(double(kHeadDim));
  scores.softcap = c.softcap;
  scores.mask = c.mask;
  fttest::ThreadRanks mesh(c.ranks);
  std::vector<at::Tensor> outputs(static_cast<std::size_t>(c.ranks));
  std::vector<torch::autograd::variable_list> grads(outputs.size());
  auto rank_main = [&](int r) {
    const at::Tensor mine = ft::load_balanced_indices(seq_len, c.ranks, r);
    const auto share = [&](const at::Tensor& t) {
      return t.index_select(2, mine).to(device, at::kFloat).requires_grad_();
    };
    const at::Tensor lq = share(q), lk = share(k), lv = share(v);
    ContextParallel context{std::make_shared<fttest::ThreadRank>(mesh, r), c.rotate};
    const at::Tensor out = context_parallel_attention(lq, lk, lv, c.documents, scores, context);
    const at::Tensor objective = (out * upstream.index_select(2, mine).to(device, at::kFloat)).sum();
    grads[static_cast<std::size_t>(r)] = torch::autograd::grad({objective}, {lq, lk, lv});
    outputs[static_cast<std::size_t>(r)] = out.detach().cpu();
    for (auto& g : grads[static_cast<std::size_t>(r)]) g = g.cpu();
  };
  std::vector<std::thread> others;
  for (int r = 1; r < c.ranks; ++r) others.emplace_back(rank_main, r);
  rank_main(0);
  for (auto& t : others) t.join();

  const char* names[] = {"q", "k", "v"};
  for (int r = 0; r < c.ranks; ++r) {
    const at::Tensor mine = ft::load_balanced_indices(seq_len, c.ranks, r);
    EXPECT_LT(relative_difference(outputs[static_cast<std::size_t>(r)], want.detach().index_select(2, mine)), 2e-5)
        << "output on rank " << r;
    for (std::size_t i = 0; i < 3; ++i)
      EXPECT_LT(relative_difference(grads[static_cast<std::size_t>(r)][i], want_grads[i].index_select(2, mine)), 2e-5)
          << "gradient of " << names[i] << " on rank " << r;
  }
}

// Every mask kind, grouped and multi-query heads, soft caps, packed documents, both rotate
// methods, 2 and 3 ranks.
inline std::vector<RingCase> ring_attention_cases() {
  const AttentionMask causal = AttentionMask::causal();
  // Packed rows of 24 positions (2 ranks) whose documents cross chunk and rank boundaries.
  const DocumentLengths packed{{5, 11, 8}, {24}};
  std::vector<RingCase> cases;
  for (const RotateMethod rotate : {RotateMethod::AllGather, RotateMethod::AllToAll}) {
    const std::string method = ft::rotate_method_name(rotate);
    cases.push_back({"causal_gqa_" + method, causal, 4, 2, 0, {}, rotate, 2});
    cases.push_back({"causal_mqa_3ranks_" + method, causal, 4, 1, 0, {}, rotate, 3});
    cases.push_back({"sliding_window_" + method, AttentionMask::sliding_window(5), 4, 2, 0, {}, rotate, 2});
    cases.push_back({"chunked_local_" + method, AttentionMask::chunked_local(7), 2, 2, 0, {}, rotate, 3});
    cases.push_back({"softcap_" + method, causal, 4, 2, 30.0 / 8, {}, rotate, 2});
    cases.push_back({"softcap_sliding_3ranks_" + method, AttentionMask::sliding_window(4), 4, 2, 2.0, {}, rotate, 3});
    cases.push_back({"packed_" + method, causal, 4, 2, 0, packed, rotate, 2});
    cases.push_back({"packed_sliding_" + method, AttentionMask::sliding_window(3), 4, 1, 0, packed, rotate, 2});
    cases.push_back({"packed_softcap_" + method, causal, 4, 2, 3.0, packed, rotate, 2});
  }
  return cases;
}

}  // namespace fttest::ring
