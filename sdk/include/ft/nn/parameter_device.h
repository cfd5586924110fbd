// Where ft::nn blocks create their parameters: host memory, or the meta device inside a
// MetaParameters scope, where a decoder of any size is built from its shapes alone (counting
// its parameters, planning its memory) without allocating a weight.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/TensorOptions.h>
#include <torch/nn/module.h>

#include <cstdint>

namespace ft::nn {

// float32 on the CPU, or on the meta device inside a MetaParameters scope (this thread).
c10::TensorOptions parameter_options();

class MetaParameters {
 public:
  MetaParameters();
  ~MetaParameters();
  MetaParameters(const MetaParameters&) = delete;
  MetaParameters& operator=(const MetaParameters&) = delete;

 private:
  bool previous_;
};

// Elements of every distinct parameter of `module` (a tensor registered twice counts once).
std::int64_t count_parameters(const torch::nn::Module& module);

}  // namespace ft::nn
