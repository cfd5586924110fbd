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
        // The next log call or close() reports write failures; a background thread cannot.
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
