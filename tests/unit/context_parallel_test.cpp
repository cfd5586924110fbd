// Context parallelism with real ranks over loopback (Gloo): context_parallel_dim ranks split each
// sequence into load-balanced chunks and run attention round the ring, and must reproduce
// torchtune's single-process golden trajectories and final weights: both rotate methods, alone
// and composed with FSDP, DDP, tensor parallelism and activation checkpointing, and across a
// resume (with the optimizer in backward: optimizer_in_backward_test.cpp). What cannot be split is refused by its key,
// before training. The host's split of a batch (padding, positions, targets) is checked directly.
#include "golden_cases.h"
#include "test_helpers.h"
#include "train/context_parallel_batch.h"

#include <ft/errors.h>

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace {

using namespace fttest::golden;

const char* kChunked = "torchtune.modules.loss.CEWithChunkedOutputLoss";
const char* kLinear = "torchtune.modules.loss.LinearCrossEntropyLoss";

struct ContextParallelCase {
  std::string name;
  std::string golden;
  std::string loss;
  int ranks;
  // Per data-parallel rank; 0: the case's own (the ranks of one context-parallel group read the
  // same samples, so with one group the case's own batch is the global batch).
  int batch_size;
  int grad_accum;
  std::string overrides;
};

void PrintTo(const ContextParallelCase& c, std::ostream* os) { *os << c.name; }

std::string run_args(const ContextParallelCase& c, const std::string& out) {
  const std::string config =
      fttest::write_temp("run.toml", config_for(c.golden, c.loss, out, c.batch_size, c.grad_accum));
  return "--nproc-per-node " + std::to_string(c.ranks) + " --config " + config + " context_parallel_dim=2 " +
         c.overrides;
}

class ContextParallelGolden : public ::testing::TestWithParam<ContextParallelCase> {};

TEST_P(ContextParallelGolden, MatchesSingleProcessTorchtune) {
  const ContextParallelCase& c = GetParam();
  const std::string out = fttest::temp_dir();
  const auto r = fttest::run_fthost(run_args(c, out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("context parallelism: each sequence split over 2 ranks"), std::string::npos) << r.output;
  expect_matches_golden(c.golden, out, r.output);
}

const std::string kAllToAll = "context_parallel_rotate_method=alltoall ";
const std::string kTp2 =
    "tensor_parallel_dim=2 tensor_parallel_plan._component_=torchtune.models.llama3.base_llama_tp_plan ";

INSTANTIATE_TEST_SUITE_P(
    Layouts, ContextParallelGolden,
    ::testing::Values(
        // 2 ranks, one context-parallel group.
        ContextParallelCase{"cp2_allgather_untied", "llama3_untied_ga2", kChunked, 2, 0, 0, ""},
        ContextParallelCase{"cp2_alltoall_tied_llama31_clipped", "llama31_tied_clip", kChunked, 2, 0, 0, kAllToAll},
        ContextParallelCase{"cp2_linear_cross_entropy_tied_activation_checkpointing", "qwen2_tied_ga2_clip", kLinear, 2,
                            0, 0, kAllToAll + "enable_activation_checkpointing=true"},
        ContextParallelCase{"cp2_ddp", "llama31_tied_clip", kChunked, 2, 0, 0,
                            "parallelism._component_=fthost.parallelism.ddp"},
        // 4 ranks: 2 data-parallel groups of 2 context-parallel ranks, FSDP sharding over all 4;
        // or 2 context-parallel x 2 tensor-parallel ranks.
        ContextParallelCase{"cp2_x_fsdp2", "llama3_untied_ga2", kChunked, 4, 1, 2, ""},
        ContextParallelCase{"cp2_x_tp2_alltoall", "qwen2_tied_ga2_clip", kChunked, 4, 0, 0, kTp2 + kAllToAll}),
    [](const auto& param_info) { return param_info.param.name; });

using fttest::expect_refused;

std::string plain_config(const std::string& out) {
  return " --config " + fttest::write_temp("run.toml", config_for("llama3_untied_ga2", kChunked, out));
}

TEST(ContextParallel, RefusesWhatItCannotSplitByItsKey) {
  expect_refused("--nproc-per-node 3" + plain_config(fttest::temp_dir()) + " context_parallel_dim=2",
                 {"context_parallel_dim", "2 does not divide the 3 data-parallel ranks"});
  expect_refused("--nproc-per-node 2" + plain_config(fttest::temp_dir()) + " context_parallel_dim=0",
                 {"context_parallel_dim", "expected an integer >= 1"});
  expect_refused("--nproc-per-node 2" + plain_config(fttest::temp_dir()) +
                     " context_parallel_dim=2 context_parallel_rotate_method=ring",
                 {"context_parallel_rotate_method", "expected \"allgather\" or \"alltoall\", got \"ring\""});
  // 4 ranks: 2 context-parallel ranks leave 2 for the shards, not 4.
  expect_refused(
      "--nproc-per-node 4" + plain_config(fttest::temp_dir()) + " context_parallel_dim=2 data_parallel_shard_dim=4",
      {"data_parallel_shard_dim", "x context_parallel_dim (2)"});
}

// A run resumed mid-epoch from a context-parallel checkpoint ends with the uninterrupted run's
// weights, bit for bit; resuming it without context parallelism (another data order) is refused.
TEST(ContextParallel, ResumesMidEpochBitwiseAndRefusesAnotherContextParallelDim) {
  const std::string shape = " epochs=1 max_steps_per_epoch=4";
  const ContextParallelCase layout{"", "qwen2_tied_ga2_clip", kChunked, 4, 1, 2, kAllToAll};
  const std::string full = fttest::temp_dir();
  const auto a = fttest::run_fthost(run_args(layout, full) + shape + " save_every_n_steps=2");
  ASSERT_EQ(a.exit_code, 0) << a.output;

  const std::string resumed = fttest::temp_dir();
  const auto b = fttest::run_fthost(run_args(layout, resumed) + shape + " resume_from_checkpoint=" + full + "/step_2");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_TRUE(fttest::read_file(resumed + "/epoch_0/model.safetensors") ==
              fttest::read_file(full + "/epoch_0/model.safetensors"));

  const std::string other = fttest::temp_dir();
  expect_refused("--nproc-per-node 4 --config " +
                     fttest::write_temp("run.toml", config_for("qwen2_tied_ga2_clip", kChunked, other, 1, 2)) + shape +
                     " resume_from_checkpoint=" + full + "/step_2",
                 {"written by a run with context_parallel_dim = 2, this run has 1"});
}

TEST(ContextParallelShare, PadsEachRowThenKeepsTheRanksTwoChunks) {
  ft::Batch batch;
  batch.tokens = at::arange(1, 11, at::kLong).view({2, 5});  // 2 rows of 5: padded to 8
  batch.labels = batch.tokens + 100;
  const at::Tensor targets = batch.labels + 1000;
  fthost::ContextParallelSplit split;
  split.size = 2;
  split.multiple = 4;
  split.pad_id = 0;
  split.ignore_index = -100;
  // Rank 1 of 2: chunks 1 and 2 of 4 chunks of 2, positions 2, 3, 4, 5.
  split.rank = 1;
  const fthost::ContextParallelShare share = fthost::context_parallel_share(batch, targets, split);
  EXPECT_TRUE(share.batch.tokens.equal(at::tensor({3, 4, 5, 0, 8, 9, 10, 0}, at::kLong).view({2, 4})));
  EXPECT_TRUE(share.batch.input_pos.equal(at::tensor({2, 3, 4, 5, 2, 3, 4, 5}, at::kLong).view({2, 4})));
  EXPECT_TRUE(
      share.targets.equal(at::tensor({1103, 1104, 1105, -100, 1108, 1109, 1110, -100}, at::kLong).view({2, 4})));
  // Rank 0: chunks 0 and 3, positions 0, 1, 6, 7 (all padding at the end).
  split.rank = 0;
  const fthost::ContextParallelShare first = fthost::context_parallel_share(batch, targets, split);
  EXPECT_TRUE(first.batch.tokens.equal(at::tensor({1, 2, 0, 0, 6, 7, 0, 0}, at::kLong).view({2, 4})));
  EXPECT_TRUE(first.targets.select(1, 2).eq(-100).all().item<bool>());
}

TEST(ContextParallelShare, PackedRowsKeepTheirPositionsAndPadWithADocumentOfTheirOwn) {
  ft::Batch batch;
  batch.tokens = at::arange(1, 7, at::kLong).view({1, 6});
  batch.labels = batch.tokens.clone();
  batch.input_pos = at::tensor({0, 1, 2, 0, 1, 2}, at::kLong).view({1, 6});
  batch.document_lengths = {{3, 3}};
  fthost::ContextParallelSplit split;
  split.size = 2;
  split.multiple = 4;
  split.rank = 0;
  const fthost::ContextParallelShare share = fthost::context_parallel_share(batch, batch.labels, split);
  // Padded to 8: positions 0 1 2 0 1 2 3 4; rank 0 holds global indices 0, 1, 6, 7.
  EXPECT_TRUE(share.batch.input_pos.equal(at::tensor({0, 1, 3, 4}, at::kLong).view({1, 4})));
  ASSERT_EQ(share.batch.document_lengths.size(), 1u);
  EXPECT_EQ(share.batch.document_lengths[0], (std::vector<std::int64_t>{3, 3, 2}));

  batch.mask = at::ones({1, 6, 6}, at::kBool);
  EXPECT_THROW(fthost::context_parallel_share(batch, batch.labels, split), ft::Error);
}

}  // namespace
