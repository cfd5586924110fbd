#include "config/preemption_settings.h"

#include <csignal>

namespace fthost {

const std::vector<std::pair<std::string, int>>& stop_signal_names() {
  // SIGKILL and SIGSTOP cannot be caught; SIGALRM times preemption_grace_s; the others report
  // faults, not requests.
  static const std::vector<std::pair<std::string, int>> names{{"SIGTERM", SIGTERM}, {"SIGINT", SIGINT},
                                                              {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2},
                                                              {"SIGHUP", SIGHUP},   {"SIGQUIT", SIGQUIT}};
  return names;
}

std::string signal_name(int signal) {
  for (const auto& [name, number] : stop_signal_names())
    if (number == signal) return name;
  return "signal " + std::to_string(signal);
}

PreemptionSettings read_preemption_settings(const ft::ConfigNode& root) {
  PreemptionSettings p;
  std::string allowed;
  for (const auto& [name, number] : stop_signal_names()) allowed += (allowed.empty() ? "" : ", ") + name;
  for (const std::string& name : root.get<std::vector<std::string>>("preemption_signals")) {
    int number = 0;
    for (const auto& [known, n] : stop_signal_names())
      if (known == name) number = n;
    if (number == 0)
      root.fail("preemption_signals",
                "\"" + name + "\" is not a signal a run can stop on; expected some of " + allowed + " ([]: none)");
    for (int seen : p.signals)
      if (seen == number) root.fail("preemption_signals", name + " is listed twice");
    p.signals.push_back(number);
  }
  if (root.has("preemption_grace_s")) {
    const auto seconds = root.get<std::int64_t>("preemption_grace_s");
    if (seconds < 1)
      root.fail("preemption_grace_s", "expected a whole number of seconds >= 1 (unset: no limit of the run's own)");
    if (p.signals.empty())
      root.fail("preemption_grace_s", "has no effect with preemption_signals = []: no signal starts the grace period");
    p.grace = std::chrono::seconds(seconds);
  }
  return p;
}

}  // namespace fthost
