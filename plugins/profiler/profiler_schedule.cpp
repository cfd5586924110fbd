#include "profiler_schedule.h"

namespace ft_profiler {

Phase Schedule::at(std::int64_t step) const {
  const std::int64_t cycle = wait + warmup + active;
  if (repeat > 0 && step >= repeat * cycle) return Phase::None;
  const std::int64_t in_cycle = step % cycle;
  if (in_cycle < wait) return Phase::None;
  if (in_cycle < wait + warmup) return Phase::Warmup;
  return in_cycle < cycle - 1 ? Phase::Record : Phase::RecordAndSave;
}

Transition transition(Phase from, Phase to) {
  const bool recording = from == Phase::Record || from == Phase::RecordAndSave;
  const bool will_record = to == Phase::Record || to == Phase::RecordAndSave;
  Transition t;
  if (from == Phase::RecordAndSave) {
    t.save = true;  // every cycle's last active step ends with its trace
    t.begin = will_record;
  } else if (recording) {
    // Record -> Record continues; Record -> None/Warmup is a truncated cycle, which torch
    // also ends without a trace.
    t.stop = !will_record;
  } else {
    t.begin = will_record;
  }
  return t;
}

}  // namespace ft_profiler
