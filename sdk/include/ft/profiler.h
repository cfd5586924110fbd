// Profiler interface (`torchtune.training.setup_torch_profiler`). The recipe drives it as
// torchtune drives torch.profiler.profile: start() before the first step, step() after every
// optimizer step, stop() once at the end (also when the run fails). A disabled profiler is a
// no-op object, so the recipe calls it unconditionally.
#pragma once

#include <ft/kind.h>

namespace ft {

class Profiler {
 public:
  static constexpr Kind kind = Kind::Profiler;
  // Trace files are named by rank; only rank 0 logs what the profiler does.
  struct Args {
    int rank = 0;
    int world_size = 1;
  };

  virtual ~Profiler() = default;
  virtual void start() = 0;
  virtual void step() = 0;
  // Ends a recording in progress and writes its trace.
  virtual void stop() = 0;
  virtual bool enabled() const = 0;
};

}  // namespace ft
