// The one clock that durations in logs and progress lines are measured with.
#pragma once

#include <chrono>

namespace ft {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace ft
