// torch.profiler.schedule: which phase each profiler step is in, and what a change of phase
// does (torch.profiler.profile's action map), without LibTorch so it can be reasoned about alone.
#pragma once

#include <cstdint>

namespace ft_profiler {

enum class Phase { None, Warmup, Record, RecordAndSave };

struct Schedule {
  std::int64_t wait = 5;
  std::int64_t warmup = 5;
  std::int64_t active = 2;
  std::int64_t repeat = 1;  // cycles; 0: repeat until the run ends

  // torch.profiler.schedule(wait, warmup, active, repeat, skip_first=0)(step).
  Phase at(std::int64_t step) const;
};

// What moving from `from` to `to` asks of the trace: end a recording (and save it), begin one.
struct Transition {
  bool save = false;   // stop recording and write the trace
  bool stop = false;   // stop recording without writing (a schedule that ends a cycle early)
  bool begin = false;  // start recording
};
Transition transition(Phase from, Phase to);

}  // namespace ft_profiler
