// c10d's NCCL backend through ft::Collectives on one rank (the GPU machine has one device): every
// collective the strategies use, on CUDA tensors in float32 and bfloat16, gives the one-rank
// result, and CPU tensors of the same run still go over Gloo.
#include "train/c10d_collectives.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <unistd.h>

namespace {

fthost::ProcessGroups one_rank_over_nccl() {
  fthost::DistributedEnvironment env;
  env.master_port = 30000 + static_cast<int>(getpid() % 2000);
  env.launcher = "fthost";
  return fthost::connect_process_groups(env, std::chrono::seconds(60), c10::DeviceType::CUDA);
}

TEST(NcclOneRank, EveryCollectiveOnCudaTensors) {
  ASSERT_TRUE(at::hasCUDA());
  auto groups = one_rank_over_nccl();
  ft::Collectives& world = *groups.world;
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    const auto options = at::TensorOptions(dtype).device(at::kCUDA);
    at::Tensor x = at::arange(16, options);
    const at::Tensor expected = x.clone();
    world.all_reduce_sum(x);
    EXPECT_TRUE(at::equal(x, expected));
    world.all_reduce_sum_async(x)->wait();
    EXPECT_TRUE(at::equal(x, expected));
    at::Tensor full = at::zeros({16}, options);
    world.all_gather(full, expected);
    EXPECT_TRUE(at::equal(full, expected));
    at::Tensor shard = at::zeros({16}, options);
    world.reduce_scatter_sum_async(shard, expected)->wait();
    EXPECT_TRUE(at::equal(shard, expected));
    world.broadcast(x, 0);
    EXPECT_TRUE(at::equal(x, expected));
  }
  at::Tensor on_cpu = at::ones({4}, at::kBFloat16);
  world.all_reduce_sum(on_cpu);  // Gloo, in the same group
  EXPECT_TRUE(at::equal(on_cpu, at::ones({4}, at::kBFloat16)));
  world.barrier();
}

}  // namespace
