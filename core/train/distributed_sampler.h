// The order in which a rank visits a dataset, as torch.utils.data.DistributedSampler gives it:
// a torch.randperm permutation seeded `seed + epoch` (or dataset order), then every
// `num_replicas`-th index starting at `rank`. drop_last trims the tail so all ranks get the same
// count; otherwise the head is repeated to pad it. Samples are grouped into batches later.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fthost {

struct SamplerOptions {
  std::int64_t num_replicas = 1;
  std::int64_t rank = 0;
  bool shuffle = false;
  std::uint64_t seed = 0;
  bool drop_last = false;
};

class DistributedSampler {
 public:
  DistributedSampler(std::size_t dataset_size, SamplerOptions options);
  std::vector<std::int64_t> indices(std::int64_t epoch) const;
  std::size_t num_samples() const { return num_samples_; }

 private:
  std::size_t dataset_size_;
  SamplerOptions options_;
  std::size_t num_samples_;
};

// Splits a rank's indices into micro-batches of batch_size; a short last batch is dropped if asked.
std::vector<std::vector<std::int64_t>> batches_of(const std::vector<std::int64_t>& indices, std::size_t batch_size,
                                                  bool drop_last);

}  // namespace fthost
