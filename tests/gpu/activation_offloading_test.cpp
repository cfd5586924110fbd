// Activation offloading on a CUDA device: a checkpointed step whose saved input waits in pinned
// host memory computes exactly the gradients of the same step whose input stays on the device
// (the round trip copies bytes; the recompute draws the same dropout mask), and the saved input
// really leaves the device: after forward the device holds less by the input's size.
#include <ft/activation_checkpointing.h>

#include <ATen/ATen.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <vector>

namespace {

const c10::Device kCuda(c10::DeviceType::CUDA, 0);

struct Layer {
  at::Tensor w1 = at::randn({64, 256}, at::TensorOptions(kCuda)).requires_grad_(true);
  at::Tensor w2 = at::randn({256, 64}, at::TensorOptions(kCuda)).requires_grad_(true);
  at::Tensor step(const at::Tensor& x) const {
    at::Tensor h = at::dropout(at::gelu(at::matmul(x, w1)), 0.1, /*train=*/true);
    return x + at::matmul(h, w2);
  }
};

std::vector<at::Tensor> gradients(const Layer& layer, const at::Tensor& leaf, bool offload) {
  layer.w1.mutable_grad() = at::Tensor();
  layer.w2.mutable_grad() = at::Tensor();
  leaf.mutable_grad() = at::Tensor();
  at::manual_seed(7);
  at::Tensor h = leaf * 1.5;
  for (int i = 0; i < 3; ++i)
    h = ft::checkpointed([&layer](const at::Tensor& x) { return layer.step(x); }, h, ft::CheckpointOptions{offload});
  torch::autograd::backward({(h * h).sum()});
  return {leaf.grad().clone(), layer.w1.grad().clone(), layer.w2.grad().clone()};
}

std::int64_t device_bytes_in_use() {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  return stats.allocated_bytes[0].current;  // index 0: the aggregate over pool kinds
}

TEST(ActivationOffloading, GradientsEqualTheDeviceResidentOnes) {
  ASSERT_TRUE(at::hasCUDA());
  at::manual_seed(1);
  const Layer layer;
  const at::Tensor leaf = at::randn({32, 128, 64}, at::TensorOptions(kCuda)).requires_grad_(true);
  const auto resident = gradients(layer, leaf, false);
  const auto offloaded = gradients(layer, leaf, true);
  for (std::size_t i = 0; i < resident.size(); ++i) EXPECT_TRUE(at::equal(resident[i], offloaded[i])) << i;
  EXPECT_GT(resident[0].abs().sum().item<double>(), 0);
}

TEST(ActivationOffloading, TheSavedInputLeavesTheDevice) {
  at::manual_seed(2);
  const Layer layer;
  const at::Tensor leaf = at::randn({64, 512, 64}, at::TensorOptions(kCuda)).requires_grad_(true);  // 8 MiB
  const std::int64_t input_bytes = leaf.numel() * 4;
  std::int64_t held[2];
  for (int offload = 0; offload < 2; ++offload) {
    const std::int64_t before = device_bytes_in_use();
    at::Tensor h = leaf * 1.5;  // the checkpointed step's input: only the node keeps it
    at::Tensor out = ft::checkpointed([&layer](const at::Tensor& x) { return layer.step(x); }, h,
                                      ft::CheckpointOptions{offload == 1});
    h.reset();
    held[offload] = device_bytes_in_use() - before;
    torch::autograd::backward({out.sum()});
  }
  EXPECT_GE(held[0] - held[1], input_bytes) << "resident " << held[0] << " B, offloaded " << held[1] << " B";
}

}  // namespace
