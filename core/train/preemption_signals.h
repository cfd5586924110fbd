// The stop request behind preemption. While a PreemptionSignals lives, each configured signal
// asks the run to stop at its next optimizer-step boundary; the recipe polls requested(). The
// process ends at once, without saving, on a second signal more than a second after the first
// (a terminal's Ctrl-C reaches a rank both directly and through the launcher: those two are one
// request), and when preemption_grace_s runs out. A checkpoint becomes visible only by its final
// rename, so neither leaves a partial one behind. docs/checkpointing.md, "Preemption".
#pragma once

#include "config/preemption_settings.h"

#include <csignal>
#include <vector>

namespace fthost {

class PreemptionSignals {
 public:
  // Installs the handlers (process-wide: one instance at a time; throws ft::Error for a second).
  explicit PreemptionSignals(const PreemptionSettings& settings);
  // Restores the previous handlers and cancels the grace timer.
  ~PreemptionSignals();
  PreemptionSignals(const PreemptionSignals&) = delete;
  PreemptionSignals& operator=(const PreemptionSignals&) = delete;

  // The first stop signal this process received (0: none yet).
  static int requested();

 private:
  void restore() noexcept;
  std::vector<std::pair<int, struct sigaction>> previous_;
};

}  // namespace fthost
