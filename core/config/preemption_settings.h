// What a run does when the cluster asks it to stop: the signals that become a stop request
// (preemption_signals) and how long it may take to save before it ends itself
// (preemption_grace_s). LibTorch-free: the launcher reads the exit status too.
// Behaviour: docs/checkpointing.md, "Preemption".
#pragma once

#include <ft/config.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace fthost {

// A run that stopped on request after saving the step it was on (or with nothing to save yet):
// sysexits.h's EX_TEMPFAIL, "try again later". Requeue wrappers tell it from success (0), a
// failure (1) and a kill (128 + signal).
inline constexpr int kPreemptedExitCode = 75;

struct PreemptionSettings {
  std::vector<int> signals;  // empty: signals keep their default action
  // After the first signal the process ends by itself once this has passed, checkpoint or not.
  // Unset: only a second signal or the cluster's SIGKILL ends a save.
  std::optional<std::chrono::seconds> grace;
};

// The signals a user may name, with the names they are named by.
const std::vector<std::pair<std::string, int>>& stop_signal_names();
// "SIGTERM" for SIGTERM; "signal N" for one outside stop_signal_names().
std::string signal_name(int signal);

// preemption_signals and preemption_grace_s; throws ft::ConfigError naming the key.
PreemptionSettings read_preemption_settings(const ft::ConfigNode& root);

}  // namespace fthost
