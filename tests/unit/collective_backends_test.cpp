// Which c10d backend carries which tensors, as the seed's init_process_group("cuda:nccl,cpu:gloo"),
// and what a CPU run's ranks report after their rendezvous through the launcher's environment.
#include "train/collective_backends.h"
#include "golden_cases.h"
#include "test_helpers.h"

#include <ft/errors.h>

namespace {

TEST(CollectiveBackends, CpuRunsUseGlooOnly) {
  const auto b = fthost::collective_backends(c10::DeviceType::CPU);
  EXPECT_EQ(b.cpu, fthost::CollectiveBackend::gloo);
  EXPECT_EQ(b.accelerator, fthost::CollectiveBackend::none);
  EXPECT_EQ(b.spec, "cpu:gloo");
}

TEST(CollectiveBackends, CudaRunsUseNcclForCudaTensorsAndGlooForCpuTensors) {
  const auto b = fthost::collective_backends(c10::DeviceType::CUDA);
  EXPECT_EQ(b.cpu, fthost::CollectiveBackend::gloo);
  EXPECT_EQ(b.accelerator, fthost::CollectiveBackend::nccl);
  EXPECT_EQ(b.spec, "cuda:nccl,cpu:gloo");
}

TEST(CollectiveBackends, OtherDevicesAreRefused) {
  EXPECT_THROW(fthost::collective_backends(c10::DeviceType::XLA), ft::Error);
}

// The ranks fthost's launcher starts read RANK / WORLD_SIZE / MASTER_* and connect with the
// backends of the configured device.
TEST(CollectiveBackends, LaunchedCpuRanksConnectOverGloo) {
  const std::string out = fttest::temp_dir();
  const std::string config = fttest::write_temp(
      "run.toml",
      fttest::golden::config_for("llama3_untied_ga2", "torchtune.modules.loss.CEWithChunkedOutputLoss", out, 2, 1));
  const auto r = fttest::run_fthost("--nproc-per-node 2 --config " + config + " max_steps_per_epoch=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 0/2: connected to 127.0.0.1:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(cpu:gloo; this rank on "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("nccl"), std::string::npos) << r.output;
}

}  // namespace
