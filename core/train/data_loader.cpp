#include "train/data_loader.h"

#include <ft/errors.h>

#include <string>
#include <utility>

namespace fthost {

DataLoaderOptions in_dataset_order(std::int64_t batch_size, int workers, int replica, int replicas) {
  DataLoaderOptions options;
  options.sampler = SamplerOptions{replicas, replica, /*shuffle=*/false, 0, /*drop_last=*/false};
  options.batch_size = batch_size;
  options.workers = workers;
  return options;
}

DataLoader::DataLoader(std::shared_ptr<const ft::Dataset> dataset, std::shared_ptr<const ft::Collate> collate,
                       DataLoaderOptions options)
    : sampler_(dataset->size(), options.sampler),
      options_(options),
      micro_batches_per_epoch_(options.sampler.drop_last
                                   ? sampler_.num_samples() / static_cast<std::size_t>(options.batch_size)
                                   : (sampler_.num_samples() + static_cast<std::size_t>(options.batch_size) - 1) /
                                         static_cast<std::size_t>(options.batch_size)),
      prefetcher_(std::move(dataset), std::move(collate), options.workers) {}

void DataLoader::start_epoch(std::int64_t epoch, std::size_t position, std::optional<std::size_t> end) {
  end_ = end ? *end : micro_batches_per_epoch_;
  if (end_ > micro_batches_per_epoch_ || position > end_)
    throw ft::Error("data loader: micro-batches " + std::to_string(position) + " to " + std::to_string(end_) +
                    " of an epoch of " + std::to_string(micro_batches_per_epoch_));
  BatchPrefetcher::Plan all =
      batches_of(sampler_.indices(epoch), static_cast<std::size_t>(options_.batch_size), options_.sampler.drop_last);
  prefetcher_.start(BatchPrefetcher::Plan(std::make_move_iterator(all.begin() + static_cast<std::ptrdiff_t>(position)),
                                          std::make_move_iterator(all.begin() + static_cast<std::ptrdiff_t>(end_))));
  position_ = position;
}

LoadedBatch DataLoader::next() {
  LoadedBatch batch = prefetcher_.next();
  ++position_;
  return batch;
}

}  // namespace fthost
