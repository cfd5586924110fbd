// torchtune.training.setup_torch_profiler through the plugin loader: the schedule decides which
// steps land in which trace, and each trace is Chrome-trace JSON with the recorded operators.
#include "logger_test_support.h"

#include <ft/profiler.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

namespace {

std::shared_ptr<ft::Profiler> make_profiler(const std::string& keys) {
  return fttest::builtin_registry().instantiate<ft::Profiler>(
      fttest::config_root("[profiler]\n_component_ = \"torchtune.training.setup_torch_profiler\"\n" + keys)
          .table("profiler"));
}

// One optimizer step's work, with a matrix size that names the step in the trace's shapes.
void work_of_step(std::int64_t step) {
  const std::int64_t n = 10 + step;
  const at::Tensor a = at::ones({n, n});
  (void)at::mm(a, a).sum();
}

std::set<std::string> entries_of(const std::string& dir) {
  std::set<std::string> names;
  if (!boost::filesystem::exists(dir)) return names;
  for (const auto& e : boost::filesystem::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

nlohmann::json trace_in(const std::string& iteration_dir) {
  for (const auto& name : entries_of(iteration_dir))
    if (name.size() > 14 && name.compare(name.size() - 14, 14, ".pt.trace.json") == 0)
      return nlohmann::json::parse(fttest::read_file(iteration_dir + "/" + name));
  ADD_FAILURE() << "no trace in " << iteration_dir;
  return {};
}

// The matrix sizes of the aten::mm calls in a trace: which steps it recorded.
std::set<std::int64_t> mm_sizes(const nlohmann::json& trace) {
  std::set<std::int64_t> sizes;
  for (const auto& e : trace.at("traceEvents"))
    if (e.value("name", "") == "aten::mm" && e.value("ph", "") == "X") {
      EXPECT_GE(e.at("dur").get<std::int64_t>(), 0);
      sizes.insert(e.at("args").at("Input Dims").at(0).at(0).get<std::int64_t>());
    }
  return sizes;
}

TEST(Profiler, ScheduleCyclesWriteOneTracePerCycleWithItsActiveSteps) {
  const std::string dir = fttest::temp_dir() + "/prof";
  auto profiler =
      make_profiler("enabled = true\noutput_dir = \"" + dir +
                    "\"\nwait_steps = 1\nwarmup_steps = 1\nactive_steps = 2\nnum_cycles = 2\nwith_flops = true\n");
  ASSERT_TRUE(profiler->enabled());
  profiler->start();
  for (std::int64_t step = 0; step < 10; ++step) {
    work_of_step(step);
    profiler->step();
  }
  profiler->stop();
  // Cycle 1 records steps 2-3 and is written when step 4 begins; cycle 2 records 6-7.
  EXPECT_EQ(entries_of(dir), (std::set<std::string>{"iteration_4", "iteration_8"}));
  const auto first = trace_in(dir + "/iteration_4");
  EXPECT_EQ(mm_sizes(first), (std::set<std::int64_t>{12, 13}));
  EXPECT_EQ(mm_sizes(trace_in(dir + "/iteration_8")), (std::set<std::int64_t>{16, 17}));
  EXPECT_EQ(entries_of(dir + "/iteration_4").count("rank0_key_averages.txt"), 1u);
  // with_flops: the table gives LibTorch's estimate, 2 * 12^3 per 12 x 12 matmul of step 2 (as
  // torch.profiler's key_averages does; Kineto's trace JSON carries no FLOPs).
  const std::string table = fttest::read_file(dir + "/iteration_4/rank0_key_averages.txt");
  EXPECT_NE(table.find("Total FLOPs"), std::string::npos) << table;
  const auto mm_row = table.find("aten::mm");
  ASSERT_NE(mm_row, std::string::npos) << table;
  const std::string row = table.substr(mm_row, table.find('\n', mm_row) - mm_row);
  EXPECT_NE(row.find(" " + std::to_string(2 * 12 * 12 * 12 + 2 * 13 * 13 * 13)), std::string::npos) << table;
}

TEST(Profiler, StopDuringARecordingKeepsItsTrace) {
  const std::string dir = fttest::temp_dir() + "/prof";
  auto profiler =
      make_profiler("enabled = true\noutput_dir = \"" + dir +
                    "\"\nwait_steps = 0\nwarmup_steps = 0\nactive_steps = 5\nnum_cycles = 1\nprofile_memory = true\n");
  profiler->start();
  for (std::int64_t step = 0; step < 2; ++step) {
    work_of_step(step);
    profiler->step();
  }
  profiler->stop();
  profiler->stop();
  EXPECT_EQ(entries_of(dir), (std::set<std::string>{"iteration_2"}));
  const auto trace = trace_in(dir + "/iteration_2");
  EXPECT_EQ(mm_sizes(trace), (std::set<std::int64_t>{10, 11}));
  std::size_t memory_events = 0;
  for (const auto& e : trace.at("traceEvents"))
    if (e.value("name", "") == "[memory]") ++memory_events;
  EXPECT_GT(memory_events, 0u) << "profile_memory records allocations";
}

TEST(Profiler, DisabledIsANoOpAndBadSchedulesNameTheirKey) {
  const std::string dir = fttest::temp_dir() + "/prof";
  auto off = make_profiler("output_dir = \"" + dir + "\"\n");
  EXPECT_FALSE(off->enabled());
  off->start();
  work_of_step(0);
  off->step();
  off->stop();
  EXPECT_FALSE(boost::filesystem::exists(dir));

  const std::string err = fttest::error_of<ft::ConfigError>(
      [&] { make_profiler("enabled = true\noutput_dir = \"" + dir + "\"\nactive_steps = 0\n"); });
  EXPECT_NE(err.find("profiler.active_steps"), std::string::npos) << err;
}

}  // namespace
