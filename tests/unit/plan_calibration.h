// What the memory plan's calibration tests share (the CPU ones, tests/unit/*plan_calibration_test.cpp,
// and the CUDA one, tests/gpu/plan_calibration_cuda_test.cpp): the text model they train
// (bench/configs/llama_36m.toml, with overrides), its random token data, the run's log line that
// puts the plan beside the measured peak, and the CPU tests' checks of it.
#pragma once

#include "test_helpers.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <regex>
#include <string>

namespace fttest::plan_calibration {

inline std::string config() { return std::string(FT_SOURCE_DIR) + "/bench/configs/llama_36m.toml"; }

// `samples` rows of `seq_len` token ids drawn from [4, max_id], trained on whole (labels = tokens),
// as fthost.datasets.tokenized_jsonl reads them: every micro-batch is full length, no padding.
inline void write_random_tokens(const std::string& path, int samples, int seq_len, int max_id) {
  std::mt19937 draw(7);
  std::uniform_int_distribution<int> token(4, max_id);
  std::ofstream data(path);
  for (int s = 0; s < samples; ++s) {
    std::string ids;
    for (int i = 0; i < seq_len; ++i) ids += (i ? "," : "") + std::to_string(token(draw));
    data << "{\"tokens\":[" << ids << "],\"labels\":[" << ids << "]}\n";
  }
}

// The run's `memory: planned peak ... measured ...` line, in bytes.
struct PlannedAgainstMeasured {
  double planned = 0;
  double before_model = 0;  // the process's own share, part of `planned`
  double measured = 0;
  std::string line;
};

inline double bytes_of(const std::string& number, const std::string& unit) {
  const double n = std::stod(number);
  return unit == "GiB" ? n * 1024 * 1024 * 1024 : n * 1024 * 1024;
}

// nullopt when the run logged no such line after its second step.
inline std::optional<PlannedAgainstMeasured> planned_against_measured(const std::string& output) {
  static const std::regex line(
      R"(memory: planned peak ([0-9.]+) (GiB|MiB) per rank \(([^;]+); ([0-9.]+) (GiB|MiB) of it the process before )"
      R"(the model\), measured ([0-9.]+) (GiB|MiB) \((peak resident set|the CUDA caching allocator's peak)\) )"
      R"(after step 2)");
  std::smatch m;
  if (!std::regex_search(output, m, line)) return std::nullopt;
  return PlannedAgainstMeasured{bytes_of(m[1], m[2]), bytes_of(m[4], m[5]), bytes_of(m[6], m[7]), m[0]};
}

// Trains `fthost_args` and checks the plan it logs against its measured peak resident set: within
// 15%, with at least 35% of the plan above the process's own share, so that the agreement rests on
// what the plan counts for the model.
inline void expect_calibrated(const std::string& name, const std::string& fthost_args) {
  const auto r = fttest::run_fthost(fthost_args);
  ASSERT_EQ(r.exit_code, 0) << name << "\n" << r.output;
  const auto logged = planned_against_measured(r.output);
  ASSERT_TRUE(logged) << name << "\n" << r.output;
  EXPECT_GE((logged->planned - logged->before_model) / logged->planned, 0.35) << name << ": " << logged->line;
  EXPECT_NEAR(logged->measured / logged->planned, 1.0, 0.15) << name << ": " << logged->line;
  std::cout << name << ": " << logged->line << "\n";
}

// `fthost plan --json` with `plan_args` puts at least a fifth of its peak in the images'
// activations: the image calibrations would not agree without them.
inline void expect_images_a_fifth_of_the_plan(const std::string& plan_args) {
  const auto r = fttest::run_command_stdout(std::string(FTHOST_BINARY) + " plan --json " + plan_args + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto plan = nlohmann::json::parse(r.output);
  EXPECT_GE(plan["memory"]["image_activations_bytes"].get<double>(), 0.2 * plan["memory"]["peak_bytes"].get<double>())
      << plan["memory"].dump(2);
}

// A run written into a temporary directory, calibrated per layout: WriteModel(dir) writes the
// model's config.json there, RunConfig(dir, out) the run's TOML for it.
template <void (*WriteModel)(const std::string&), std::string (*RunConfig)(const std::string&, const std::string&)>
class WrittenRunCalibration : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteModel(dir_.str());
    config_ = dir_.file("run.toml");
    std::ofstream(config_) << RunConfig(dir_.str(), dir_.file("out"));
  }

  void expect_calibrated(const std::string& name, const std::string& overrides) {
    plan_calibration::expect_calibrated(name, "--config " + config_ + " " + overrides + " output_dir=" +
                                                  dir_.file(name) + " checkpointer.output_dir=" + dir_.file(name));
  }

  fttest::TempDir dir_;
  std::string config_;
};

}  // namespace fttest::plan_calibration
