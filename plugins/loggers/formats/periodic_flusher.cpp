#include "periodic_flusher.h"

#include <ft/log.h>

#include <exception>

namespace ft_loggers {

PeriodicFlusher::PeriodicFlusher(std::chrono::milliseconds interval, std::function<void()> flush)
    : interval_(interval), flush_(std::move(flush)) {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
      lock.unlock();
      try {
        flush_();
      } catch (const std::exception& e) {
        // A background thread cannot throw to anyone: the function records its own failures for
        // the next log call (the TensorBoard logger does); this is the last resort for one that does not.
        ft::log::warn("periodic flush failed: {}", e.what());
      }
      lock.lock();
    }
  });
}

void PeriodicFlusher::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace ft_loggers
