// The memory plan against what runs measure: six layouts of a 36M-parameter Llama-3-shaped model
// (one rank in fp32 and bf16, activation checkpointing, FSDP over 2 ranks, tensor parallelism 2,
// context parallelism 2) each train two steps and log the plan for their micro-batches beside
// the process's peak resident set (the kernel's VmHWM); every one agrees within 15%. The
// process's memory before the model exists is part of both, so each layout must also plan at
// least 35% of its peak in tensors the plan counts, or the agreement would say little.
#include "plan_calibration.h"

#include <gtest/gtest.h>

#include <string>

namespace {

namespace calibration = fttest::plan_calibration;

class PlanCalibration : public ::testing::Test {
 protected:
  void SetUp() override { calibration::write_random_tokens(dir_.file("long.jsonl"), 64, 512, 8000); }

  // Trains the layout and checks its logged plan against its measured peak.
  void expect_calibrated(const std::string& name, const std::string& args) {
    calibration::expect_calibrated(name, args + " --config " + calibration::config() +
                                             " num_threads=1 dataset.source=" + dir_.file("long.jsonl") +
                                             " output_dir=" + dir_.file(name));
  }

  fttest::TempDir dir_;
};

TEST_F(PlanCalibration, OneRankFloat32AndBfloat16) {
  expect_calibrated("fp32", "");
  expect_calibrated("bf16", "dtype=bf16");
}

TEST_F(PlanCalibration, ActivationCheckpointing) {
  expect_calibrated("checkpointed", "enable_activation_checkpointing=true");
}

TEST_F(PlanCalibration, FsdpOverTwoRanks) { expect_calibrated("fsdp2", "--nproc-per-node 2"); }

TEST_F(PlanCalibration, TensorParallelTwo) {
  expect_calibrated("tp2",
                    "--nproc-per-node 2 tensor_parallel_dim=2 "
                    "tensor_parallel_plan._component_=torchtune.models.llama3.base_llama_tp_plan");
}

TEST_F(PlanCalibration, ContextParallelTwo) { expect_calibrated("cp2", "--nproc-per-node 2 context_parallel_dim=2"); }

}  // namespace
