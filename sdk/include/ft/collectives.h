// Collective communication over a group of ranks, as plugins see it. The host implements it
// over c10d (Gloo on CPU, NCCL on CUDA builds); plugins never include c10d headers, whose API
// differs between LibTorch versions.
#pragma once

#include <ft/errors.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace ft {

// A collective started asynchronously; wait() blocks until it is done and rethrows its error.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  virtual void wait() = 0;
};

class CompletedCollective final : public PendingCollective {
 public:
  void wait() override {}
};

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;  // within this group
  virtual int size() const = 0;
  // In place: `tensor` becomes the element-wise sum over the group.
  virtual void all_reduce_sum(at::Tensor& tensor) = 0;
  virtual std::unique_ptr<PendingCollective> all_reduce_sum_async(at::Tensor& tensor) = 0;
  // `full` (size() * shard.numel() elements, contiguous) receives every rank's shard in rank order.
  virtual void all_gather(at::Tensor& full, const at::Tensor& shard) = 0;
  // `shard` receives this rank's slice of the element-wise sum of every rank's `full`.
  virtual void reduce_scatter_sum(at::Tensor& shard, const at::Tensor& full) = 0;
  // The same, started asynchronously: `shard` holds the result once wait() returns; `full` must
  // not change before then. The default runs it at once (for groups with nothing to overlap).
  virtual std::unique_ptr<PendingCollective> reduce_scatter_sum_async(at::Tensor& shard, const at::Tensor& full) {
    reduce_scatter_sum(shard, full);
    return std::make_unique<CompletedCollective>();
  }
  virtual void broadcast(at::Tensor& tensor, int root) = 0;
  virtual void barrier() = 0;
  // all_gather started asynchronously (ABI 6.1): `full` holds every shard once wait() returns;
  // `shard` must not change before then. The default runs it at once.
  virtual std::unique_ptr<PendingCollective> all_gather_async(at::Tensor& full, const at::Tensor& shard) {
    all_gather(full, shard);
    return std::make_unique<CompletedCollective>();
  }
  // All-to-all of rows (ABI 9.0; expert parallelism): `input`'s rows (dim 0), contiguous, go out
  // in consecutive blocks, input_splits[r] rows to rank r; `output` receives output_splits[r] rows
  // from each rank r, in rank order. Every rank's rows have the same shape and dtype. A group that
  // cannot exchange rows refuses.
  virtual void all_to_all(at::Tensor& output, const at::Tensor& input, const std::vector<std::int64_t>& output_splits,
                          const std::vector<std::int64_t>& input_splits) {
    (void)output, (void)input, (void)output_splits, (void)input_splits;
    throw Error("this process group cannot exchange rows all-to-all (expert parallelism needs it)");
  }
};

// Creates a sub-group of world ranks. Every rank must call it for every group, in the same
// order; ranks outside `world_ranks` get nullptr.
using GroupFactory = std::function<std::shared_ptr<Collectives>(const std::vector<int>& world_ranks)>;

}  // namespace ft
