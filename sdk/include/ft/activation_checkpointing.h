// Activation checkpointing for model plugins: a layer runs without keeping its intermediate
// activations, and is run again during backward to rebuild them (torch.utils.checkpoint).
// Any model can use it for whatever it calls a layer; the host only asks the model which of
// its layers to checkpoint (ft::ModelLayerCheckpointing::set_activation_checkpointing, a model role).
#pragma once

#include <ft/export.h>

#include <ATen/core/Tensor.h>

#include <functional>

namespace ft {

// One differentiable step `input -> output`. It may capture other tensors it reads (positions,
// a mask); they are kept alive until backward. Parameters are read from the live module both
// times, so a strategy that frees and refills parameter storage between forward and backward
// (sharded data parallelism) must have refilled it before this step's backward starts.
using CheckpointedStep = std::function<at::Tensor(const at::Tensor& input)>;

struct CheckpointOptions {
  // Activation offloading: between forward and backward the saved input lives in pinned host
  // memory instead of on its device (copied out and back asynchronously on the current stream,
  // so the copies are ordered with the computation). Only for inputs on a CUDA device.
  bool offload_input = false;
};

// Runs `step(input)` with gradients disabled, so autograd keeps none of its activations, and
// returns its output attached to one autograd node that keeps only `input` (and `step`). That
// node's backward runs `step` again with gradients enabled on a detached copy of `input`, with
// the random generators (the CPU's and `input`'s device's) set back to their state at forward
// time, so dropout draws the same mask; afterwards the generators continue from where they were.
// The incoming gradient is then back-propagated through the recomputed graph: parameters'
// gradients accumulate through their usual AccumulateGrad nodes (their hooks run as without
// checkpointing) and the input's gradient flows on to whatever produced `input`.
//
// Without checkpointing anything to gain (gradients disabled, or `input` does not require a
// gradient, so autograd would never reach the node) `step(input)` is returned as it is.
FT_API at::Tensor checkpointed(CheckpointedStep step, const at::Tensor& input, const CheckpointOptions& options = {});

}  // namespace ft
