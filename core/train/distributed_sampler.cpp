#include "train/distributed_sampler.h"

#include <ft/errors.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/randperm.h>

#include <string>

namespace fthost {

DistributedSampler::DistributedSampler(std::size_t dataset_size, SamplerOptions options)
    : dataset_size_(dataset_size), options_(options) {
  const auto n = static_cast<std::int64_t>(dataset_size), r = options.num_replicas;
  if (r < 1 || options.rank < 0 || options.rank >= r)
    throw ft::Error("sampler: rank " + std::to_string(options.rank) + " is outside 0.." + std::to_string(r - 1));
  // torch: with drop_last, ceil((n - r) / r) when n is not divisible; else ceil(n / r).
  if (options.drop_last && n % r != 0)
    num_samples_ = static_cast<std::size_t>(n < r ? 0 : (n - r + r - 1) / r);
  else
    num_samples_ = static_cast<std::size_t>((n + r - 1) / r);
}

std::vector<std::int64_t> DistributedSampler::indices(std::int64_t epoch) const {
  const auto n = static_cast<std::int64_t>(dataset_size_);
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  if (options_.shuffle) {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(options_.seed + static_cast<std::uint64_t>(epoch));
    at::Tensor perm = at::randperm(n, generator, at::kLong);
    const auto* p = perm.data_ptr<std::int64_t>();
    order.assign(p, p + n);
  } else {
    for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  }
  const std::size_t total = num_samples_ * static_cast<std::size_t>(options_.num_replicas);
  if (order.size() < total) {
    const std::size_t original = order.size();
    for (std::size_t i = 0; order.size() < total; ++i) order.push_back(order[i % original]);
  }
  order.resize(total);
  std::vector<std::int64_t> mine;
  mine.reserve(num_samples_);
  for (std::size_t i = static_cast<std::size_t>(options_.rank); i < total; i += options_.num_replicas)
    mine.push_back(order[i]);
  return mine;
}

std::vector<std::vector<std::int64_t>> batches_of(const std::vector<std::int64_t>& indices, std::size_t batch_size,
                                                  bool drop_last) {
  if (batch_size == 0) throw ft::Error("batch_size: expected a positive integer");
  std::vector<std::vector<std::int64_t>> out;
  for (std::size_t i = 0; i < indices.size(); i += batch_size) {
    const std::size_t end = std::min(indices.size(), i + batch_size);
    if (end - i < batch_size && drop_last) break;
    out.emplace_back(indices.begin() + static_cast<std::ptrdiff_t>(i),
                     indices.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return out;
}

}  // namespace fthost
