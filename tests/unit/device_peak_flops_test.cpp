// The GPU peaks mfu divides by, against NVIDIA's datasheets (dense, no sparsity): the names are
// what the driver reports for each board.
#include "plan/device_peak_flops.h"

#include <gtest/gtest.h>

namespace {

double tflops(const std::string& name, c10::ScalarType dtype) {
  const auto peak = fthost::datasheet_peak_flops(name, dtype);
  return peak ? peak->flops_per_second / 1e12 : -1;
}

TEST(DevicePeakFlops, DatasheetFiguresByBoardName) {
  EXPECT_EQ(tflops("NVIDIA H100 80GB HBM3", c10::kBFloat16), 989.0);  // SXM5
  EXPECT_EQ(tflops("NVIDIA H100 80GB HBM3", c10::kFloat), 67.0);
  EXPECT_EQ(tflops("NVIDIA H100 PCIe", c10::kBFloat16), 756.0);
  EXPECT_EQ(tflops("NVIDIA H100 NVL", c10::kHalf), 835.0);
  EXPECT_EQ(tflops("NVIDIA H200", c10::kBFloat16), 989.0);
  EXPECT_EQ(tflops("NVIDIA H200 NVL", c10::kBFloat16), 835.0);
  EXPECT_EQ(tflops("NVIDIA GH200 480GB", c10::kBFloat16), 989.0);
  EXPECT_EQ(tflops("NVIDIA A100-SXM4-80GB", c10::kBFloat16), 312.0);
  EXPECT_EQ(tflops("NVIDIA A100-SXM4-80GB", c10::kFloat), 19.5);
}

TEST(DevicePeakFlops, UnlistedBoardsAndDtypesAreMeasuredInstead) {
  EXPECT_EQ(tflops("Tesla T4", c10::kBFloat16), -1);
  EXPECT_EQ(tflops("NVIDIA H100 80GB HBM3", c10::kDouble), -1);
  EXPECT_EQ(tflops("", c10::kFloat), -1);
}

TEST(DevicePeakFlops, CpuPeakIsMeasuredAndPositive) {
  const auto peak = fthost::device_peak_flops(c10::Device(c10::kCPU), c10::kFloat);
  EXPECT_TRUE(peak.measured);
  EXPECT_GT(peak.flops_per_second, 1e8);  // any machine that runs the suite does 0.1 GFLOP/s
  EXPECT_NE(peak.source.find("measured"), std::string::npos) << peak.source;
}

}  // namespace
