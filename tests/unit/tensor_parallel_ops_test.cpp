// The SDK's tensor-parallel pieces in one process: plan patterns, and the vocabulary-parallel
// cross-entropy over a group of two threads (each holding half the vocabulary) against ATen's
// cross-entropy over the whole logits, loss and gradients.
#include <ft/tensor_parallel.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace {

TEST(TensorParallelPlan, PatternsMatchOnePathComponentPerStar) {
  EXPECT_TRUE(ft::module_pattern_matches("layers.*.attn.q_proj", "layers.12.attn.q_proj"));
  EXPECT_TRUE(ft::module_pattern_matches("layers.*.attn.[qkv]_proj", "layers.0.attn.v_proj"));
  EXPECT_TRUE(ft::module_pattern_matches("output", "output"));
  EXPECT_FALSE(ft::module_pattern_matches("layers.*", "layers.0.attn"));  // * is one component
  EXPECT_FALSE(ft::module_pattern_matches("layers.*.attn", "layers.0.attn.q_proj"));
  EXPECT_FALSE(ft::module_pattern_matches("layers.*.attn.q_proj", "layers.0.attn.output_proj"));
  EXPECT_FALSE(ft::module_pattern_matches("output", "layers.0.output"));
}

// Two ranks as two threads: each collective waits for both contributions.
class ThreadPair {
 public:
  // Returns the sum of both ranks' `values` (same shape) to each.
  at::Tensor exchange(int rank, const at::Tensor& values, bool concatenate) {
    std::unique_lock<std::mutex> lock(mutex_);
    const int round = round_;
    parts_[rank] = values.clone();
    if (++arrived_ == 2) {
      result_ = concatenate ? at::cat({parts_[0].reshape({-1}), parts_[1].reshape({-1})}) : parts_[0] + parts_[1];
      arrived_ = 0;
      ++round_;
      done_.notify_all();
    } else {
      done_.wait(lock, [&] { return round_ != round; });
    }
    return result_.clone();
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  at::Tensor parts_[2];
  at::Tensor result_;
  int arrived_ = 0;
  int round_ = 0;
};

class ThreadRank final : public ft::Collectives {
 public:
  ThreadRank(ThreadPair& pair, int rank) : pair_(pair), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  void all_reduce_sum(at::Tensor& tensor) override { tensor.copy_(pair_.exchange(rank_, tensor, false)); }
  std::unique_ptr<ft::PendingCollective> all_reduce_sum_async(at::Tensor&) override {
    throw std::logic_error("not used");
  }
  void all_gather(at::Tensor& full, const at::Tensor& shard) override {
    full.view({-1}).copy_(pair_.exchange(rank_, shard, true));
  }
  void reduce_scatter_sum(at::Tensor&, const at::Tensor&) override { throw std::logic_error("not used"); }
  void broadcast(at::Tensor&, int) override { throw std::logic_error("not used"); }
  void barrier() override {}

 private:
  ThreadPair& pair_;
  int rank_;
};

TEST(VocabParallelCrossEntropy, EqualsTheWholeLogitsLossAndGradient) {
  at::manual_seed(3);
  const std::int64_t tokens = 7, vocab = 10;
  const at::Tensor logits = at::randn({tokens, vocab}, at::kFloat) * 4;
  at::Tensor targets = at::randint(0, vocab, {tokens}, at::kLong);
  targets[2] = -100;  // ignored
  targets[4] = 9;     // in the second rank's half
  targets[5] = 0;     // in the first rank's half

  const at::Tensor whole = logits.clone().requires_grad_(true);
  const at::Tensor expected = at::cross_entropy_loss(whole, targets, {}, at::Reduction::Sum, -100);
  expected.backward();

  ThreadPair pair;
  at::Tensor losses[2], gradients[2];
  auto rank_main = [&](int rank) {
    auto group = std::make_shared<ThreadRank>(pair, rank);
    const at::Tensor half = logits.narrow(1, rank * vocab / 2, vocab / 2).clone().requires_grad_(true);
    const at::Tensor loss =
        ft::vocab_parallel_cross_entropy_sum(half, targets, -100, ft::VocabShard{group, rank * vocab / 2});
    loss.backward();
    losses[rank] = loss.detach();
    gradients[rank] = half.grad();
  };
  std::thread other(rank_main, 1);
  rank_main(0);
  other.join();

  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_NEAR(losses[rank].item<float>(), expected.item<float>(), 1e-5 * std::abs(expected.item<float>()));
    EXPECT_TRUE(at::allclose(gradients[rank], whole.grad().narrow(1, rank * vocab / 2, vocab / 2), 1e-5, 1e-6))
        << rank << "\n"
        << gradients[rank] << "\n"
        << whole.grad();
  }
  EXPECT_TRUE(at::equal(losses[0], losses[1]));                // every rank holds the same loss
  EXPECT_EQ(gradients[0][2].abs().sum().item<float>(), 0.0f);  // the ignored token has no gradient
}

}  // namespace
