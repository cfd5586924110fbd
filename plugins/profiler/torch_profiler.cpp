// Plugin ft_profiler: torchtune.training.setup_torch_profiler.
//
// Follows torch.profiler.profile with torchtune's schedule and defaults: wait, warm up, record
// `active_steps` optimizer steps, write the cycle's trace to <output_dir>/iteration_<step>/,
// repeat `num_cycles` times. Operators are recorded through LibTorch's profiler (the Kineto
// API, which also collects CPU operators when LibTorch was built without libkineto). With
// Kineto the trace is Kineto's own export; without it (Debian's LibTorch) fthost writes the
// Chrome trace from the recorded operators, and device kernels (CUDA) cannot be traced.
#include "chrome_trace.h"
#include "profiler_schedule.h"

#include <ft/log.h>
#include <ft/plugin.h>
#include <ft/profiler.h>

#include <torch/csrc/autograd/profiler_kineto.h>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include <chrono>
#include <fstream>
#include <optional>
#include <set>

namespace {

using ft::ValueType;
using ft_profiler::Phase;
namespace kineto_api = torch::autograd::profiler;
namespace profiler_impl = torch::profiler::impl;

struct ProfilerSettings {
  std::string output_dir;
  bool cpu = true, cuda = true;
  bool profile_memory = false, with_stack = false, record_shapes = true, with_flops = false;
  ft_profiler::Schedule schedule;
};

std::int64_t unix_millis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

class TorchProfiler final : public ft::Profiler {
 public:
  TorchProfiler(ProfilerSettings settings, ft::Profiler::Args args) : s_(std::move(settings)), args_(args) {}
  ~TorchProfiler() override {
    try {
      stop();
    } catch (const std::exception& e) {
      ft::log::warn("profiler: {}", e.what());
    }
  }

  bool enabled() const override { return true; }

  void start() override {
    if (started_) return;
    started_ = true;
    step_num_ = 0;
    phase_ = s_.schedule.at(0);
    if (phase_ == Phase::Record || phase_ == Phase::RecordAndSave) begin_recording();
  }

  void step() override {
    if (!started_ || stopped_) return;
    const Phase from = phase_;
    ++step_num_;
    phase_ = s_.schedule.at(step_num_);
    const auto t = ft_profiler::transition(from, phase_);
    if (t.save) end_recording(true);
    if (t.stop) end_recording(false);
    if (t.begin) begin_recording();
  }

  void stop() override {
    if (!started_ || stopped_) return;
    stopped_ = true;
    if (recording_) end_recording(true);  // a cycle cut short by the end of the run keeps its trace
  }

 private:
  void begin_recording() {
    const profiler_impl::ProfilerConfig config(profiler_impl::ProfilerState::KINETO, s_.record_shapes,
                                               s_.profile_memory, s_.with_stack, s_.with_flops, /*with_modules=*/false,
                                               profiler_impl::ExperimentalConfig({}, false, /*verbose=*/s_.with_stack));
    // Device activity needs libkineto with CUPTI; without it only the CPU operators (CUDA
    // launches included) are recorded.
    std::set<profiler_impl::ActivityType> activities;
    if (s_.cpu) activities.insert(profiler_impl::ActivityType::CPU);
    if (s_.cuda && FT_WITH_CUDA) activities.insert(profiler_impl::ActivityType::CUDA);
    if (activities.empty()) activities.insert(profiler_impl::ActivityType::CPU);
    kineto_api::prepareProfiler(config, activities);
    kineto_api::enableProfiler(config, activities);
    recording_ = true;
  }

  void end_recording(bool save) {
    if (!recording_) return;
    recording_ = false;
    std::unique_ptr<kineto_api::ProfilerResult> result = kineto_api::disableProfiler();
    if (!save || !result) return;
    const std::string dir = fmt::format("{}/iteration_{}", s_.output_dir, step_num_);
    boost::filesystem::create_directories(dir);
    const std::string trace = fmt::format("{}/rank{}.{}.pt.trace.json", dir, args_.rank, unix_millis());
    bool kineto_wrote_it = false;
    try {
      result->save(trace);  // Kineto's exporter, device activity included; throws without libkineto
      kineto_wrote_it = boost::filesystem::exists(trace);
    } catch (const std::exception&) {
    }
    if (!kineto_wrote_it) write_text(trace, ft_profiler::chrome_trace_json(result->events(), args_.rank));
    write_text(fmt::format("{}/rank{}_key_averages.txt", dir, args_.rank),
               ft_profiler::operator_summary_table(result->events(), 25));
    if (args_.rank == 0)
      ft::log::info("profiler: step {}: {} events to {}{}", step_num_, result->events().size(), trace,
                    kineto_wrote_it ? "" : " (CPU operators; this LibTorch has no Kineto)");
  }

  ProfilerSettings s_;
  ft::Profiler::Args args_;
  Phase phase_ = Phase::None;
  std::int64_t step_num_ = 0;
  bool started_ = false, stopped_ = false, recording_ = false;
};

// torchtune's DummyProfiler.
class DisabledProfiler final : public ft::Profiler {
 public:
  void start() override {}
  void step() override {}
  void stop() override {}
  bool enabled() const override { return false; }
};

std::unique_ptr<ft::Profiler> make_profiler(const ft::ConfigNode& cfg, ft::Profiler::Args args) {
  auto warn = [&](const std::string& message) {
    if (args.rank == 0) ft::log::warn("profiler: {}", message);
  };
  if (!cfg.get<bool>("enabled")) {
    warn("profiling disabled");
    return std::make_unique<DisabledProfiler>();
  }
  ProfilerSettings s;
  s.cpu = cfg.get<bool>("cpu");
  s.cuda = cfg.get<bool>("cuda");
  if (!s.cpu && !s.cuda) {
    warn("no activities specified, defaulting to CPU + CUDA");
    s.cpu = s.cuda = true;
  }
  if (s.cuda && FT_WITH_CUDA)
    warn(
        "cuda = true: device kernels are traced only by a LibTorch with Kineto/CUPTI; otherwise the trace holds "
        "the CPU operators, CUDA launches included (docs/loggers.md)");
  else if (s.cuda && args.rank == 0)
    ft::log::info("profiler: cuda = true, but this LibTorch has no CUDA: recording CPU operators");

  // torchtune: no schedule key -> the default schedule; some missing -> those keys defaulted.
  const ft_profiler::Schedule defaults;
  const char* keys[] = {"wait_steps", "warmup_steps", "active_steps", "num_cycles"};
  std::int64_t* fields[] = {&s.schedule.wait, &s.schedule.warmup, &s.schedule.active, &s.schedule.repeat};
  const std::int64_t fallback[] = {defaults.wait, defaults.warmup, defaults.active, defaults.repeat};
  std::vector<std::string> missing;
  for (int i = 0; i < 4; ++i) {
    if (auto v = cfg.get_optional<std::int64_t>(keys[i]))
      *fields[i] = *v;
    else
      missing.push_back(fmt::format("{} = {}", keys[i], fallback[i]));
  }
  if (missing.size() == 4)
    warn("no schedule found in config, defaulting to " + fmt::format("{}", fmt::join(missing, ", ")));
  else if (!missing.empty())
    warn("missing keys in profiler schedule, defaulting to " + fmt::format("{}", fmt::join(missing, ", ")));
  if (s.schedule.wait < 0) cfg.fail("wait_steps", "expected 0 or more steps");
  if (s.schedule.warmup < 0) cfg.fail("warmup_steps", "expected 0 or more steps");
  if (s.schedule.active < 1) cfg.fail("active_steps", "expected at least 1 step");
  if (s.schedule.repeat < 0) cfg.fail("num_cycles", "expected 0 (repeat until the end) or more cycles");

  s.profile_memory = cfg.get<bool>("profile_memory");
  s.with_stack = cfg.get<bool>("with_stack") || s.profile_memory;
  s.record_shapes = cfg.get<bool>("record_shapes") || s.profile_memory;
  if (s.profile_memory) warn("profile_memory requires with_stack and record_shapes; both are enabled");
  if (s.with_stack) warn("with_stack: LibTorch records TorchScript stacks only; C++ frames are not available");
  s.with_flops = cfg.get<bool>("with_flops");
  s.output_dir = cfg.get<std::string>("output_dir", "");
  if (s.output_dir.empty()) {
    warn("no output_dir in the profiler config, defaulting to profiler_output");
    s.output_dir = "profiler_output";
  }
  boost::filesystem::create_directories(s.output_dir);
  if (args.rank == 0)
    ft::log::info("profiler: wait {} warmup {} active {} x {} cycle(s), traces under {}", s.schedule.wait,
                  s.schedule.warmup, s.schedule.active, s.schedule.repeat, s.output_dir);
  return std::make_unique<TorchProfiler>(std::move(s), args);
}

void register_components(ft::Registry& reg) {
  ft::Schema s;
  s.optional("enabled", ValueType::Bool, "false", "profile the run")
      .optional("output_dir", ValueType::String, "", "trace directory (default profiler_output)")
      .optional("cpu", ValueType::Bool, "true", "record CPU operators")
      .optional("cuda", ValueType::Bool, "true", "record CUDA activity (needs a LibTorch with Kineto)")
      .optional("profile_memory", ValueType::Bool, "false", "record allocations (turns on with_stack, record_shapes)")
      .optional("with_stack", ValueType::Bool, "false", "record call stacks (TorchScript frames in LibTorch)")
      .optional("record_shapes", ValueType::Bool, "true", "record operator input shapes")
      .optional("with_flops", ValueType::Bool, "false", "estimate FLOPs of matmul and convolution")
      .optional("wait_steps", ValueType::Int, "", "steps skipped per cycle (default 5)")
      .optional("warmup_steps", ValueType::Int, "", "steps warmed up per cycle (default 5)")
      .optional("active_steps", ValueType::Int, "", "steps recorded per cycle (default 2)")
      .optional("num_cycles", ValueType::Int, "", "cycles, 0: until the run ends (default 1)");
  reg.add<ft::Profiler>("torchtune.training.setup_torch_profiler", s,
                        "LibTorch profiler on torch.profiler's schedule; Chrome traces per cycle", make_profiler);
}

}  // namespace

FT_PLUGIN("ft_profiler", "0.1.0", register_components)
