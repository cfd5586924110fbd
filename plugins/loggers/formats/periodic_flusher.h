// Calls a function every `interval` on a background thread until stopped, so buffered log
// records reach the disk while training is busy between log steps. The function keeps its own
// failures for the owner to report: nothing thrown on the thread reaches the host.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace ft_loggers {

class PeriodicFlusher {
 public:
  PeriodicFlusher(std::chrono::milliseconds interval, std::function<void()> flush);
  ~PeriodicFlusher() { stop(); }
  PeriodicFlusher(const PeriodicFlusher&) = delete;
  PeriodicFlusher& operator=(const PeriodicFlusher&) = delete;

  // Joins the thread; idempotent. The function is not called after stop() returns.
  void stop();

 private:
  std::chrono::milliseconds interval_;
  std::function<void()> flush_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ft_loggers
