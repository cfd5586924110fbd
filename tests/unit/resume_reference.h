// The uninterrupted reference run that interrupted runs are compared with (the kill-and-resume
// and preemption tests), and the helpers that compare them: logged rows step by step, final
// weights byte for byte, and the entries a checkpoint directory holds.
#pragma once

#include "golden_cases.h"
#include "test_helpers.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fttest::resume {

namespace fs = std::filesystem;
using golden::json;
using golden::read_jsonl;

inline const char* kCase = "qwen2_tied_ga2_clip";  // shuffled, accumulating, clipped, warmup + cosine
inline const char* kLoss = "torchtune.modules.loss.CEWithChunkedOutputLoss";
// 2 epochs of 6 steps: the second epoch's shuffle, and step checkpoints inside both.
inline const std::string kShape = " epochs=2 max_steps_per_epoch=6";
inline constexpr int kTotalSteps = 12;

inline std::string config_in(const std::string& out) {
  return fttest::write_temp("run.toml", fttest::golden::config_for(kCase, kLoss, out));
}

inline std::string metrics_of(const std::string& out) { return out + "/logs/metrics.jsonl"; }

inline std::size_t lines_in(const std::string& path) {
  std::ifstream in(path);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

// step -> logged row, of an uninterrupted run.
inline std::map<int, json> by_step(const std::vector<json>& rows) {
  std::map<int, json> out;
  for (const json& r : rows) out[r.at("step").get<int>()] = r;
  return out;
}

// Every row a (possibly interrupted and resumed, so repeated) run logged is bitwise the
// reference's row of that step, and every step was logged.
inline void expect_same_trajectory(const std::map<int, json>& reference, const std::vector<json>& rows,
                                   const std::string& log) {
  std::set<int> seen;
  for (const json& r : rows) {
    const int step = r.at("step").get<int>();
    SCOPED_TRACE("step " + std::to_string(step));
    ASSERT_TRUE(reference.count(step)) << log;
    const json& e = reference.at(step);
    EXPECT_EQ(r.at("loss").get<double>(), e.at("loss").get<double>());
    EXPECT_EQ(r.at("lr").get<double>(), e.at("lr").get<double>());
    EXPECT_EQ(r.at("grad_norm").get<double>(), e.at("grad_norm").get<double>());
    EXPECT_EQ(r.at("num_tokens").get<double>(), e.at("num_tokens").get<double>());
    seen.insert(step);
  }
  EXPECT_EQ(seen.size(), reference.size()) << log;
}

// A run's logged trajectory, step by step in the order logged: each row of
// <out>/logs/metrics.jsonl cut to step, loss, lr, grad_norm and num_tokens (those it has), as
// text, so two runs compare with ==.
inline std::vector<std::string> trajectory(const std::string& out) {
  std::vector<std::string> steps;
  for (const json& l : read_jsonl(out + "/logs/metrics.jsonl")) {
    json kept;
    for (const char* key : {"step", "loss", "lr", "grad_norm", "num_tokens"})
      if (l.contains(key)) kept[key] = l.at(key);
    steps.push_back(kept.dump());
  }
  return steps;
}

inline std::set<std::string> entries_of(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

inline std::set<std::string> hidden_entries_of(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& name : entries_of(dir))
    if (name[0] == '.') names.insert(name);
  return names;
}

// relative path -> contents, of every file under `dir`.
inline std::map<std::string, std::string> files_under(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = fttest::read_file(e.path().string());
  return out;
}

// The uninterrupted run every interrupted one is compared with (no step checkpoints: saving
// must not change the run either), made once per test process.
class ResumeReference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (reference_) return;
    reference_dir_ = new std::string(fttest::temp_dir());
    auto r = fttest::run_fthost("--config " + config_in(*reference_dir_) + kShape);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    reference_ = new std::map<int, json>(by_step(read_jsonl(metrics_of(*reference_dir_))));
    ASSERT_EQ(reference_->size(), static_cast<std::size_t>(kTotalSteps));
  }

  static std::string final_weights(const std::string& out) {
    return fttest::read_file(out + "/epoch_1/model.safetensors");
  }

  inline static std::map<int, json>* reference_ = nullptr;
  inline static std::string* reference_dir_ = nullptr;
};

}  // namespace fttest::resume
