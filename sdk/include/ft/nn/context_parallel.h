// Context parallelism for ft::nn attention: each sequence is split across a group of ranks
// (ft/context_parallel_layout.h), and attention runs as ring attention, every rank's queries
// against every rank's keys and values, the partial results merged exactly by their log-sum-exp.
// Everything else in the model is per position and runs on the rank's own positions; rotary
// embeddings take the positions' global indices.
#pragma once

#include <ft/collectives.h>
#include <ft/context_parallel_layout.h>
#include <ft/model_context_parallelism.h>
#include <ft/nn/attention_mask.h>
#include <ft/nn/attention_scores.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>

namespace ft::nn {

// How the keys and values travel: all-gathered at once (one collective per layer and pass, every
// rank's keys and values held together), or passed round the ring one rank's at a time (n - 1
// exchanges, two ranks' held at a time).
using ft::RotateMethod;

struct ContextParallel {
  std::shared_ptr<ft::Collectives> group;  // the ranks sharing each sequence
  RotateMethod rotate = RotateMethod::AllGather;
};

// Attention of this rank's queries q [b, heads, s, hd] over the whole sequence's keys and values,
// of which this rank holds k, v [b, kv_heads, s, hd] (its positions, in ft::load_balanced_indices
// order; the sequence is s * group size long). `documents` (packed rows): the global rows'
// document lengths; attention stays within each document. Returns [b, heads, s, hd]: what
// attention over the unsplit sequence computes at this rank's positions. Differentiable in q,
// k and v; every rank of the group must call it in the same order.
at::Tensor context_parallel_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const DocumentLengths& documents, const AttentionScores& scores,
                                      const ContextParallel& context);

}  // namespace ft::nn
