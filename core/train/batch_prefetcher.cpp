#include "train/batch_prefetcher.h"

#include <ft/errors.h>

#include <stdexcept>
#include <string>

namespace fthost {

BatchPrefetcher::BatchPrefetcher(std::shared_ptr<const ft::Dataset> dataset, std::shared_ptr<const ft::Collate> collate,
                                 int workers)
    : dataset_(std::move(dataset)), collate_(std::move(collate)), ahead_(2 * static_cast<std::size_t>(workers)) {
  for (int w = 0; w < workers; ++w) threads_.emplace_back([this] { work(); });
}

BatchPrefetcher::~BatchPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& t : threads_) t.join();
}

void BatchPrefetcher::start(Plan plan) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    plan_ = std::move(plan);
    ++generation_;
    next_to_make_ = next_to_take_ = 0;
    made_.clear();
  }
  changed_.notify_all();
}

LoadedBatch load_batch(const ft::Dataset& dataset, const ft::Collate* collate,
                       const std::vector<std::int64_t>& indices) {
  LoadedBatch loaded;
  loaded.samples.reserve(indices.size());
  for (auto index : indices) loaded.samples.push_back(dataset.get(static_cast<std::size_t>(index)));
  if (collate) loaded.batch = collate->collate(loaded.samples);
  return loaded;
}

LoadedBatch BatchPrefetcher::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (next_to_take_ >= plan_.size())
    throw std::out_of_range("batch prefetcher: batch " + std::to_string(next_to_take_) + " of a plan of " +
                            std::to_string(plan_.size()));
  if (threads_.empty()) return load_batch(*dataset_, collate_.get(), plan_[next_to_take_++]);
  changed_.wait(lock, [&] { return made_.count(next_to_take_) > 0; });
  Made made = std::move(made_.at(next_to_take_));
  made_.erase(next_to_take_++);
  lock.unlock();
  changed_.notify_all();  // room for one more batch ahead
  if (made.error) std::rethrow_exception(made.error);
  return std::move(made.batch);
}

void BatchPrefetcher::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(
        lock, [&] { return stopping_ || (next_to_make_ < plan_.size() && next_to_make_ <= next_to_take_ + ahead_); });
    if (stopping_) return;
    const std::size_t index = next_to_make_++;
    const std::uint64_t generation = generation_;
    const std::vector<std::int64_t> indices = plan_[index];
    lock.unlock();
    Made made;
    try {
      made.batch = load_batch(*dataset_, collate_.get(), indices);
    } catch (...) {
      made.error = std::current_exception();
    }
    lock.lock();
    if (generation == generation_) made_.emplace(index, std::move(made));
    changed_.notify_all();
  }
}

}  // namespace fthost
