// Data pipeline: the sampler reproduces torchtune's data order (golden order files computed by
// torchtune's recipe), the pre-tokenized dataset reads the golden data, padded_collate_sft pads.
#include "builtin_plugins.h"
#include "test_helpers.h"
#include "train/distributed_sampler.h"

#include <ft/collate.h>
#include <ft/dataset.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

namespace {

class Data : public fttest::BuiltinPluginsTest {
 protected:
  static std::shared_ptr<ft::Dataset> dataset(const std::string& source) {
    return registry().instantiate<ft::Dataset>(
        root("[dataset]\n_component_ = \"fthost.datasets.tokenized_jsonl\"\nsource = \"" + source + "\"\n")
            .table("dataset"));
  }
};

std::string golden(const std::string& name) { return fttest::fixtures_dir() + "/golden/" + name; }

// Each golden case's micro-batches, step by step, as torchtune's recipe drew them.
void expect_golden_order(const std::string& order_file, std::size_t dataset_size, bool shuffle, std::size_t batch_size,
                         std::size_t grad_accum) {
  fthost::DistributedSampler sampler(dataset_size, {1, 0, shuffle, 0, true});
  auto batches = fthost::batches_of(sampler.indices(0), batch_size, true);
  std::istringstream lines(fttest::read_file(golden(order_file)));
  ASSERT_FALSE(lines.str().empty()) << "missing " << golden(order_file);
  std::string line;
  std::size_t steps = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    ASSERT_EQ(j["epoch"].get<int>(), 0);
    const auto micro = j["ranks"][0].get<std::vector<std::vector<std::int64_t>>>();
    ASSERT_EQ(micro.size(), grad_accum);
    for (std::size_t m = 0; m < micro.size(); ++m)
      EXPECT_EQ(batches.at(steps * grad_accum + m), micro[m]) << order_file << " step " << steps + 1;
    ++steps;
  }
  EXPECT_EQ(steps, 10u);
}

TEST(DistributedSamplerTest, UnshuffledOrderMatchesTorchtune) {
  expect_golden_order("llama3_untied_ga2.order.jsonl", 48, false, 2, 2);
}
TEST(DistributedSamplerTest, ShuffledOrderMatchesTorchtuneRandperm) {
  expect_golden_order("llama31_tied_clip.order.jsonl", 32, true, 2, 1);
  expect_golden_order("qwen2_tied_ga2_clip.order.jsonl", 48, true, 2, 2);
}

TEST(DistributedSamplerTest, SplitsAcrossRanksLikeTorch) {
  // n=10, 4 replicas: drop_last keeps 2 each (8 samples); without it, 3 each, padded from the head.
  fthost::DistributedSampler dropped(10, {4, 1, false, 0, true});
  EXPECT_EQ(dropped.indices(0), (std::vector<std::int64_t>{1, 5}));
  fthost::DistributedSampler padded(10, {4, 3, false, 0, false});
  EXPECT_EQ(padded.indices(0), (std::vector<std::int64_t>{3, 7, 1}));
  // Different epochs give different permutations of the same set.
  fthost::DistributedSampler shuffled(10, {1, 0, true, 0, false});
  auto e0 = shuffled.indices(0), e1 = shuffled.indices(1);
  EXPECT_NE(e0, e1);
  std::sort(e0.begin(), e0.end());
  std::sort(e1.begin(), e1.end());
  EXPECT_EQ(e0, e1);
  EXPECT_THROW(fthost::DistributedSampler(10, {2, 2, false, 0, false}), ft::Error);
}

TEST(DistributedSamplerTest, BatchesDropOrKeepTheShortTail) {
  std::vector<std::int64_t> idx{0, 1, 2, 3, 4};
  EXPECT_EQ(fthost::batches_of(idx, 2, true).size(), 2u);
  EXPECT_EQ(fthost::batches_of(idx, 2, false).back(), (std::vector<std::int64_t>{4}));
}

TEST_F(Data, ReadsGoldenPretokenizedData) {
  auto ds = dataset(golden("fixtures/llama3_untied/data.jsonl"));
  ASSERT_EQ(ds->size(), 48u);
  // The first sample's tokens as torchtune's initial-state file lists them.
  auto initial = nlohmann::json::parse(fttest::read_file(golden("llama3_untied_ga2.initial.json")));
  EXPECT_EQ(ds->get(0).tokens, initial["sample0_tokens"].get<std::vector<std::int64_t>>());
  // Count of trained targets after the label shift: labels[1:] != -100.
  std::int64_t targets = 0;
  for (std::size_t i = 0; i < ds->size(); ++i) {
    const auto labels = ds->get(i).labels;
    targets += std::count_if(labels.begin() + 1, labels.end(), [](std::int64_t l) { return l != ft::kIgnoreIndex; });
  }
  EXPECT_EQ(targets, initial["dataset_num_targets"].get<std::int64_t>());
}

TEST_F(Data, BadLinesNameFileAndLine) {
  auto msg = [&](const std::string& body) {
    auto path = fttest::write_temp("d.jsonl", body);
    return fttest::error_of([&] { dataset(path); });
  };
  EXPECT_NE(msg("{\"tokens\": [1, 2], \"labels\": [1, 2]}\n{\"tokens\": [1,\n").find("d.jsonl:2: not valid JSON"),
            std::string::npos);
  EXPECT_NE(
      msg("{\"tokens\": [1, 2], \"labels\": [1]}\n").find("d.jsonl:1: \"tokens\" has 2 entries but \"labels\" has 1"),
      std::string::npos);
  EXPECT_NE(msg("{\"tokens\": [1, 2.5], \"labels\": [1, 2]}\n").find("non-integer: 2.5"), std::string::npos);
  EXPECT_NE(msg("{\"input_ids\": [1]}\n").find("expected a list of integers under \"tokens\""), std::string::npos);
  EXPECT_NE(msg("\n").find("dataset has no samples"), std::string::npos);
  EXPECT_NE(fttest::error_of([&] { dataset("/nonexistent/x.jsonl"); }).find("/nonexistent/x.jsonl: cannot open"),
            std::string::npos);
}

TEST_F(Data, PaddedCollateSftPadsRight) {
  auto collate = registry().instantiate<ft::Collate>(
      root("[collate_fn]\n_component_ = \"torchtune.data.padded_collate_sft\"\n").table("collate_fn"), {7, -100});
  // Unpacked samples: tokens and labels only, no input_pos or seq_lens.
  auto batch = collate->collate({{{1, 2, 3}, {-100, 2, 3}, {}, {}}, {{4}, {4}, {}, {}}});
  EXPECT_TRUE(at::equal(batch.tokens, at::tensor(std::vector<std::int64_t>{1, 2, 3, 4, 7, 7}).view({2, 3})));
  EXPECT_TRUE(at::equal(batch.labels, at::tensor(std::vector<std::int64_t>{-100, 2, 3, 4, -100, -100}).view({2, 3})));
}

}  // namespace
