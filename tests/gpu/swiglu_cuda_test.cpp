// The CUDA SwiGLU kernel against ATen's composite silu(gate) * up: values and both gradients, in
// float32 (within float32 rounding) and bfloat16 (within one bfloat16 rounding of the product,
// which the kernel rounds once where the composite rounds twice).
#include <ft_cuda_kernels/swiglu.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

namespace {

struct Result {
  at::Tensor out, grad_gate, grad_up;
};

Result run(bool fused, at::ScalarType dtype) {
  at::manual_seed(3);
  const auto options = at::TensorOptions(at::kCUDA).dtype(at::kFloat);
  at::Tensor gate = (at::randn({4, 333, 257}, options) * 3).to(dtype).requires_grad_(true);
  at::Tensor up = at::randn({4, 333, 257}, options).to(dtype).requires_grad_(true);
  at::Tensor grad_out = at::randn({4, 333, 257}, options).to(dtype);
  at::Tensor out = fused ? ft_cuda_kernels::swiglu(gate, up) : at::silu(gate) * up;
  torch::autograd::backward({out}, {grad_out});
  return {out.detach().to(at::kFloat), gate.grad().to(at::kFloat), up.grad().to(at::kFloat)};
}

double max_relative(const at::Tensor& a, const at::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max()).item<double>();
}

TEST(SwigluCuda, MatchesTheAtenComposite) {
  ASSERT_TRUE(ft_cuda_kernels::available());
  for (auto [dtype, tolerance] : {std::pair{at::kFloat, 1e-6}, std::pair{at::kBFloat16, 1e-2}}) {
    SCOPED_TRACE(c10::toString(dtype));
    const Result fused = run(true, dtype), reference = run(false, dtype);
    EXPECT_LT(max_relative(fused.out, reference.out), tolerance);
    EXPECT_LT(max_relative(fused.grad_gate, reference.grad_gate), tolerance);
    EXPECT_LT(max_relative(fused.grad_up, reference.grad_up), tolerance);
  }
}

}  // namespace
