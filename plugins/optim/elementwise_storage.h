// How the single-pass optimizer kernels read and write a tensor's elements: float and double are
// computed in their own precision, bfloat16 in float (rounded once when stored), and every
// tensor is walked as one contiguous range split across the intra-op threads.
#pragma once

#include <ft/errors.h>
#include <ft/text.h>

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <c10/util/BFloat16.h>

#include <cstdint>
#include <string>
#include <type_traits>

namespace ftoptim {

template <class Stored>
using ComputeType = std::conditional_t<std::is_same_v<Stored, double>, double, float>;

// Elements per task: large enough that a thread's share amortises the fork, small enough that
// two threads split a 1M-element tensor.
constexpr std::int64_t kGrainSize = 1 << 15;

inline void require_like(const at::Tensor& param, const at::Tensor& other, const char* what) {
  if (!other.defined()) throw ft::Error(std::string("optimizer: the ") + what + " is missing");
  if (other.sizes() != param.sizes() || other.scalar_type() != param.scalar_type() || !other.is_contiguous() ||
      other.device() != param.device())
    throw ft::Error(std::string("optimizer: the ") + what + " (" + ft::shape_text(other.sizes()) + ", " +
                    c10::toString(other.scalar_type()) + ") does not match its parameter (" +
                    ft::shape_text(param.sizes()) + ", " + c10::toString(param.scalar_type()) +
                    ") or is not contiguous");
}

// Calls body.template operator()<Stored>() for the parameter's dtype.
template <class Body>
void dispatch_stored_type(const at::Tensor& param, Body&& body) {
  switch (param.scalar_type()) {
    case at::kFloat: body(float{}); break;
    case at::kDouble: body(double{}); break;
    case at::kBFloat16: body(c10::BFloat16{}); break;
    default:
      throw ft::Error(std::string("optimizer: parameters of dtype ") + c10::toString(param.scalar_type()) +
                      " are not supported (float32, float64 and bfloat16 are)");
  }
}

}  // namespace ftoptim
