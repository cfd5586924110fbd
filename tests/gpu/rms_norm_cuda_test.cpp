// RMSNorm on CUDA (LibTorch's fused kernel, then the scale) against Hugging Face's definition
// written out in ATen ops: normalise in float32, round to the input's dtype, multiply by the scale
// in that dtype. Values and gradients, float32 and bfloat16.
#include <ft_kernels/fused_ops.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

namespace {

struct Result {
  at::Tensor out, grad_x, grad_scale;
};

Result run(bool fused, at::ScalarType dtype) {
  at::manual_seed(5);
  const auto options = at::TensorOptions(at::kCUDA).dtype(at::kFloat);
  at::Tensor x = at::randn({3, 77, 256}, options).to(dtype).requires_grad_(true);
  at::Tensor scale = (1 + 0.1 * at::randn({256}, options)).to(dtype).requires_grad_(true);
  const at::Tensor grad_out = at::randn({3, 77, 256}, options).to(dtype);
  at::Tensor out;
  if (fused) {
    out = ft_kernels::rms_norm(x, scale, 1e-5);
  } else {
    const at::Tensor xf = x.to(at::kFloat);
    out = (xf * at::rsqrt(xf.pow(2).mean(-1, true) + 1e-5)).to(dtype) * scale;
  }
  torch::autograd::backward({out}, {grad_out});
  return {out.detach().to(at::kFloat), x.grad().to(at::kFloat), scale.grad().to(at::kFloat)};
}

double max_relative(const at::Tensor& a, const at::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max()).item<double>();
}

TEST(RmsNormCuda, MatchesHuggingFacesDefinition) {
  for (auto [dtype, tolerance] : {std::pair{at::kFloat, 1e-5}, std::pair{at::kBFloat16, 1e-2}}) {
    SCOPED_TRACE(c10::toString(dtype));
    const Result fused = run(true, dtype), reference = run(false, dtype);
    EXPECT_LT(max_relative(fused.out, reference.out), tolerance);
    EXPECT_LT(max_relative(fused.grad_x, reference.grad_x), tolerance);
    EXPECT_LT(max_relative(fused.grad_scale, reference.grad_scale), tolerance);
  }
}

}  // namespace
