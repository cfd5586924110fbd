#include "train/preemption_signals.h"

#include <ft/errors.h>
#include <ft/text.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

namespace fthost {

namespace {

// Only async-signal-safe work below this line's handlers: flags, clock_gettime, alarm, write,
// _exit. The messages are composed when the handlers are installed.
volatile std::sig_atomic_t first_signal = 0;
std::atomic<std::int64_t> first_signal_ns{0};
static_assert(std::atomic<std::int64_t>::is_always_lock_free);
unsigned grace_seconds = 0;
std::atomic<bool> installed{false};
constexpr std::int64_t kOneRequestNs = 1'000'000'000;

char second_signal_message[256];
std::size_t second_signal_length = 0;
char grace_message[256];
std::size_t grace_length = 0;

std::int64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

void write_message(const char* text, std::size_t length) {
  while (length > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, length);
    if (n <= 0) return;
    text += n;
    length -= static_cast<std::size_t>(n);
  }
}

void on_stop_signal(int signal) {
  const int saved_errno = errno;
  if (first_signal == 0) {
    first_signal_ns.store(monotonic_ns());
    first_signal = signal;
    if (grace_seconds > 0) ::alarm(grace_seconds);
  } else if (monotonic_ns() - first_signal_ns.load() > kOneRequestNs) {
    write_message(second_signal_message, second_signal_length);
    ::_exit(128 + signal);
  }
  errno = saved_errno;
}

void on_grace_over(int) {
  write_message(grace_message, grace_length);
  ::_exit(128 + first_signal);
}

void compose(char* buffer, std::size_t& length, const std::string& text) {
  const std::size_t n = std::min(text.size(), std::size_t{255});
  std::memcpy(buffer, text.data(), n);
  length = n;
}

}  // namespace

PreemptionSignals::PreemptionSignals(const PreemptionSettings& settings) {
  if (installed.exchange(true)) throw ft::Error("preemption signals: handlers are already installed in this process");
  first_signal = 0;
  grace_seconds = settings.grace ? static_cast<unsigned>(settings.grace->count()) : 0;
  const char* rank = std::getenv("RANK");
  const std::string who = rank ? "fthost rank " + std::string(rank) : "fthost";
  compose(second_signal_message, second_signal_length,
          who + ": a second stop signal: ending now without saving (the newest complete checkpoint is unchanged)\n");
  compose(grace_message, grace_length,
          who + ": preemption_grace_s = " + std::to_string(grace_seconds) +
              " ran out before the stop was saved: ending now (the newest complete checkpoint is unchanged)\n");

  auto install = [&](int signal, void (*handler)(int)) {
    struct sigaction action {};
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // a stop request must not fail a blocking read or write
    struct sigaction old {};
    if (sigaction(signal, &action, &old) != 0)
      throw ft::Error("preemption_signals: cannot handle " + signal_name(signal) + ": " + ft::errno_text(errno));
    previous_.emplace_back(signal, old);
  };
  try {
    for (int signal : settings.signals) install(signal, on_stop_signal);
    if (grace_seconds > 0) install(SIGALRM, on_grace_over);
  } catch (...) {
    restore();
    throw;
  }
}

PreemptionSignals::~PreemptionSignals() { restore(); }

void PreemptionSignals::restore() noexcept {
  if (grace_seconds > 0) ::alarm(0);
  for (auto it = previous_.rbegin(); it != previous_.rend(); ++it) sigaction(it->first, &it->second, nullptr);
  grace_seconds = 0;
  installed = false;
}

int PreemptionSignals::requested() { return first_signal; }

}  // namespace fthost
