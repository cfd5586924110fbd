// bitsandbytes' Adam updates on CUDA (plugins/optim/cuda) against the CPU kernel, which
// tests/unit/plugins/bitsandbytes_optimizers_test.cpp checks against bitsandbytes itself: the
// same gradients over several steps give the same bits in the parameters, the codes and the
// absmax of the 8-bit form and the moments of the 32-bit form, in float32 and bfloat16 and with a
// short last block. Paged state is unified memory that kernels and the host both read.
#include "bitsandbytes_adam_update.h"
#include "cuda/bitsandbytes_adam_cuda.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace {

struct Moments {
  at::Tensor param, state1, state2, absmax1, absmax2;
  Moments to(const at::Device& device) const {
    auto move = [&](const at::Tensor& t) { return t.defined() ? t.to(device).contiguous() : t; };
    return {move(param), move(state1), move(state2), move(absmax1), move(absmax2)};
  }
};

void expect_same_bits(const at::Tensor& cpu, const at::Tensor& cuda, const char* what) {
  if (!cpu.defined()) return;
  const at::Tensor back = cuda.to(at::kCPU);
  EXPECT_TRUE(at::equal(cpu, back)) << what << ": " << (cpu.to(at::kDouble) - back.to(at::kDouble)).abs().max();
}

void check_steps(bool eight_bit, at::ScalarType dtype, std::int64_t numel) {
  SCOPED_TRACE(std::string(eight_bit ? "8-bit " : "32-bit ") + c10::toString(dtype) + " " + std::to_string(numel));
  at::manual_seed(11);
  ftoptim::AdamHyperparameters h;
  h.lr = 1e-2;
  h.weight_decay = 0.01;
  h.decoupled_weight_decay = true;
  const std::int64_t blocks = (numel + 255) / 256;
  Moments cpu;
  cpu.param = at::randn({numel}).to(dtype);
  cpu.state1 = eight_bit ? at::zeros({numel}, at::kByte) : at::zeros({numel});
  cpu.state2 = eight_bit ? at::zeros({numel}, at::kByte) : at::zeros({numel});
  if (eight_bit) {
    cpu.absmax1 = at::zeros({blocks});
    cpu.absmax2 = at::zeros({blocks});
  }
  Moments cuda = cpu.to(at::Device(at::kCUDA, 0));
  for (std::int64_t step = 1; step <= 5; ++step) {
    const at::Tensor grad = (at::randn({numel}) * (step % 2 ? 1.0 : 1e-3)).to(dtype);
    const at::Tensor grad_cuda = grad.to(at::kCUDA);
    if (eight_bit) {
      ftoptim::adam_8bit_blockwise_update(cpu.param, grad, cpu.state1, cpu.state2, cpu.absmax1, cpu.absmax2, step, h);
      ftoptim::adam_8bit_blockwise_update(cuda.param, grad_cuda, cuda.state1, cuda.state2, cuda.absmax1, cuda.absmax2,
                                          step, h);
    } else {
      ftoptim::adam_32bit_update(cpu.param, grad, cpu.state1, cpu.state2, step, h);
      ftoptim::adam_32bit_update(cuda.param, grad_cuda, cuda.state1, cuda.state2, step, h);
    }
  }
  expect_same_bits(cpu.param, cuda.param, "parameters");
  expect_same_bits(cpu.state1, cuda.state1, "state1");
  expect_same_bits(cpu.state2, cuda.state2, "state2");
  expect_same_bits(cpu.absmax1, cuda.absmax1, "absmax1");
  expect_same_bits(cpu.absmax2, cuda.absmax2, "absmax2");
}

TEST(BitsAndBytesCuda, EightBitUpdateGivesTheCpuKernelsBits) {
  for (const auto dtype : {at::kFloat, at::kBFloat16})
    for (const std::int64_t numel : {4096, 70000}) check_steps(true, dtype, numel);
}

TEST(BitsAndBytesCuda, ThirtyTwoBitUpdateGivesTheCpuKernelsBits) {
  for (const auto dtype : {at::kFloat, at::kBFloat16}) check_steps(false, dtype, 70000);
}

TEST(BitsAndBytesCuda, PagedStateIsUnifiedMemoryTheKernelsUpdate) {
  const at::Device device(at::kCUDA, 0);
  at::Tensor state1 = ftoptim::paged_zeros({70000}, at::kByte, device);
  at::Tensor state2 = ftoptim::paged_zeros({70000}, at::kByte, device);
  at::Tensor absmax1 = ftoptim::paged_zeros({274}, at::kFloat, device);
  at::Tensor absmax2 = ftoptim::paged_zeros({274}, at::kFloat, device);
  ASSERT_TRUE(ftoptim::is_paged(state1));
  EXPECT_FALSE(ftoptim::is_paged(at::zeros({4}, at::TensorOptions(device))));
  EXPECT_EQ(state1.device(), device);
  EXPECT_EQ(state1.sum().item<std::int64_t>(), 0);
  at::manual_seed(5);
  const at::Tensor param_cpu = at::randn({70000});
  const at::Tensor grad = at::randn({70000});
  at::Tensor param = param_cpu.to(device);
  ftoptim::AdamHyperparameters h;
  ftoptim::adam_8bit_blockwise_update(param, grad.to(device), state1, state2, absmax1, absmax2, 1, h);
  at::Tensor s1 = at::zeros({70000}, at::kByte), s2 = at::zeros({70000}, at::kByte);
  at::Tensor a1 = at::zeros({274}), a2 = at::zeros({274});
  at::Tensor p = param_cpu.clone();
  ftoptim::adam_8bit_blockwise_update(p, grad, s1, s2, a1, a2, 1, h);
  expect_same_bits(p, param, "parameters");
  expect_same_bits(s1, state1, "state1");
  expect_same_bits(a2, absmax2, "absmax2");
}

}  // namespace
