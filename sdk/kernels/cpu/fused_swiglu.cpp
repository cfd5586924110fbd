#include "fused_op_support.h"

#include <ft_cuda_kernels/swiglu.h>
#include <ft_kernels/fused_ops.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

namespace ft_kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct SwigluFunction : torch::autograd::Function<SwigluFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gate_in, const at::Tensor& up_in) {
    const at::Tensor gate = gate_in.contiguous(), up = up_in.contiguous();
    at::Tensor y = at::empty_like(gate);
    with_kernels(gate, [&](const auto& k, auto tag) {
      using T = decltype(tag);
      parallel_rows(gate.numel(), 1, [&](std::int64_t begin, std::int64_t end) {
        k.swiglu_forward(typed<T>(gate) + begin, typed<T>(up) + begin, typed<T>(y) + begin, end - begin);
      });
    });
    ctx->save_for_backward({gate, up});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &gate = saved[0], &up = saved[1];
    const at::Tensor gy = grads[0].contiguous();
    at::Tensor ggate = at::empty_like(gate), gup = at::empty_like(up);
    with_kernels(gate, [&](const auto& k, auto tag) {
      using T = decltype(tag);
      parallel_rows(gate.numel(), 1, [&](std::int64_t begin, std::int64_t end) {
        k.swiglu_backward(typed<T>(gy) + begin, typed<T>(gate) + begin, typed<T>(up) + begin, typed<T>(ggate) + begin,
                          typed<T>(gup) + begin, end - begin);
      });
    });
    return {ggate, gup};
  }
};

}  // namespace

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up) {
  if (gate.is_cuda() && ft_cuda_kernels::available() && gate.sizes() == up.sizes() &&
      gate.scalar_type() == up.scalar_type() && gate.scalar_type() != at::kDouble)
    return ft_cuda_kernels::swiglu(gate, up);
  if (!takes_fused_path(gate, up) || gate.sizes() != up.sizes()) return at::silu(gate) * up;
  return SwigluFunction::apply(gate, up);
}

}  // namespace ft_kernels
