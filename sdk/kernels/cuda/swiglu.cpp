#include "swiglu_launch.h"

#include <ft/errors.h>
#include <ft_cuda_kernels/swiglu.h>

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/autograd/custom_function.h>

#include <string>

namespace ft_cuda_kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

launch::ElementType element_type(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return launch::ElementType::float32;
    case at::kBFloat16: return launch::ElementType::bfloat16;
    case at::kHalf: return launch::ElementType::float16;
    default: throw ft::Error(std::string("swiglu on CUDA: unsupported dtype ") + c10::toString(t.scalar_type()));
  }
}

void check_launch(const char* what) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) throw ft::Error(std::string(what) + ": " + cudaGetErrorString(status));
}

struct SwigluCudaFunction : torch::autograd::Function<SwigluCudaFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gate_in, const at::Tensor& up_in) {
    const at::Tensor gate = gate_in.contiguous(), up = up_in.contiguous();
    const c10::cuda::CUDAGuard device(gate.device());
    at::Tensor out = at::empty_like(gate);
    launch::swiglu_forward(gate.const_data_ptr(), up.const_data_ptr(), out.mutable_data_ptr(), gate.numel(),
                           element_type(gate), c10::cuda::getCurrentCUDAStream());
    check_launch("swiglu forward kernel");
    ctx->save_for_backward({gate, up});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &gate = saved[0], &up = saved[1];
    const at::Tensor grad_out = grads[0].contiguous();
    const c10::cuda::CUDAGuard device(gate.device());
    at::Tensor grad_gate = at::empty_like(gate), grad_up = at::empty_like(up);
    launch::swiglu_backward(grad_out.const_data_ptr(), gate.const_data_ptr(), up.const_data_ptr(),
                            grad_gate.mutable_data_ptr(), grad_up.mutable_data_ptr(), gate.numel(), element_type(gate),
                            c10::cuda::getCurrentCUDAStream());
    check_launch("swiglu backward kernel");
    return {grad_gate, grad_up};
  }
};

}  // namespace

bool available() { return true; }

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up) {
  if (!gate.is_cuda() || gate.sizes() != up.sizes() || gate.scalar_type() != up.scalar_type() ||
      gate.device() != up.device())
    throw ft::Error("swiglu on CUDA: gate and up must be CUDA tensors of one shape, dtype and device");
  return SwigluCudaFunction::apply(gate, up);
}

}  // namespace ft_cuda_kernels
