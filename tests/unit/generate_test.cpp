// Generation with the Llama plugin's KV cache, on torchtune's golden fixture models loaded the
// way `fthost generate` loads a Hugging Face directory: the cache gives the same logits as the
// full forward at every position and the same greedy tokens as recomputing the whole sequence;
// the first generated position's logits equal those torchtune's own model computed
// (initial.json); seeded sampling repeats; stop tokens end the answer.
#include "builtin_plugins.h"
#include "generate/generation_setup.h"
#include "generate/token_generator.h"
#include "golden_cases.h"

#include <ft/model.h>
#include <ft/model_kv_cache.h>

#include <torch/torch.h>

#include <set>

namespace {

using fttest::golden::json;

using fttest::golden::fixture_of;

std::vector<std::string> every_case() {
  std::vector<std::string> cases = fttest::golden::shared_case_names();
  for (const auto& name : fttest::golden::family_case_names()) cases.push_back(name);
  return cases;
}

// The fixture directory's model and weights, as `fthost generate --checkpoint DIR` builds them.
fthost::GenerationComponents load_fixture(const std::string& case_name) {
  fthost::GenerationSource source;
  source.checkpoint_dir = fixture_of(case_name);
  const ft::ConfigNode root = ft::detail::root_node(fthost::generation_config(source, fttest::builtin_registry()));
  return fthost::build_generation_components(fttest::builtin_registry(), root, source.checkpoint_dir);
}

std::vector<std::int64_t> sample_tokens(const std::string& case_name, std::size_t index) {
  const auto rows = fttest::golden::read_jsonl(fixture_of(case_name) + "/data.jsonl");
  return rows.at(index).at("tokens").get<std::vector<std::int64_t>>();
}

std::vector<std::int64_t> head(const std::vector<std::int64_t>& tokens, std::size_t n) {
  return {tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(std::min(n, tokens.size()))};
}

fthost::Generation run(ft::Model& model, bool kv_cache, const std::vector<std::int64_t>& prompt,
                       fthost::TokenSampler& sampler, fthost::GenerationLimits limits) {
  fthost::NextTokenLogits logits(model, kv_cache, static_cast<std::int64_t>(prompt.size()) + limits.max_new_tokens);
  return fthost::generate(logits, prompt, sampler, limits);
}

fthost::Generation greedy(ft::Model& model, bool kv_cache, const std::vector<std::int64_t>& prompt,
                          std::int64_t new_tokens, std::vector<std::int64_t> stop = {}) {
  fthost::TokenSampler sampler({}, 0);
  return run(model, kv_cache, prompt, sampler, {new_tokens, std::move(stop)});
}

class GoldenGeneration : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenGeneration, FirstGeneratedPositionHasTorchtunesLastPositionLogits) {
  const std::string case_name = GetParam();
  const json initial =
      fttest::golden::read_json(fttest::golden::golden_dir_of(case_name) + "/" + case_name + ".initial.json");
  const auto prompt = sample_tokens(case_name, initial.at("longest_sample_index").get<std::size_t>());
  ASSERT_EQ(prompt.size(), initial.at("longest_sample_len").get<std::size_t>());
  const auto expected = initial.at("longest_sample_last_pos_logits_first8").get<std::vector<double>>();
  auto c = load_fixture(case_name);
  for (bool kv_cache : {true, false}) {
    fthost::NextTokenLogits logits(*c.model, kv_cache, static_cast<std::int64_t>(prompt.size()) + 1);
    const std::vector<float> first = logits.start(prompt);
    ASSERT_EQ(first.size(), static_cast<std::size_t>(c.model->vocab_size()));
    for (std::size_t i = 0; i < expected.size(); ++i)
      EXPECT_NEAR(first[i], expected[i], 1e-4) << case_name << " logit " << i << (kv_cache ? " (KV cache)" : "");
  }
}

TEST_P(GoldenGeneration, GreedyTokensWithTheKvCacheEqualRecomputingTheSequence) {
  const std::string case_name = GetParam();
  auto c = load_fixture(case_name);
  for (std::size_t sample : {0u, 3u}) {
    const auto prompt = head(sample_tokens(case_name, sample), 10);
    const auto cached = greedy(*c.model, true, prompt, 48);
    const auto recomputed = greedy(*c.model, false, prompt, 48);
    ASSERT_EQ(cached.tokens.size(), 48u);
    EXPECT_EQ(cached.tokens, recomputed.tokens) << case_name << " sample " << sample;
  }
}

TEST_P(GoldenGeneration, CachedLogitsEqualTheFullForwardAtEveryPosition) {
  const std::string case_name = GetParam();
  auto c = load_fixture(case_name);
  const auto tokens = head(sample_tokens(case_name, 0), 32);
  const auto n = static_cast<std::int64_t>(tokens.size());
  torch::NoGradGuard no_grad;
  ft::ModelInput full;
  full.tokens = torch::tensor(tokens).view({1, n});
  const torch::Tensor expected = c.model->forward(full).logits.at(0)[0];  // [n, vocab]

  // Prefill 11 tokens, then one per call.
  ft::role_of<ft::ModelKvCache>(*c.model)->setup_caches(1, n);
  std::vector<torch::Tensor> rows;
  const std::int64_t prefill = 11;
  for (std::int64_t start = 0; start < n; start += start == 0 ? prefill : 1) {
    const std::int64_t length = start == 0 ? prefill : 1;
    ft::ModelInput step;
    step.tokens = full.tokens.narrow(1, start, length);
    step.input_pos = torch::arange(start, start + length).view({1, length});
    rows.push_back(c.model->forward(step).logits.at(0)[0]);
  }
  ft::role_of<ft::ModelKvCache>(*c.model)->remove_caches();
  const torch::Tensor cached = torch::cat(rows, 0);
  ASSERT_EQ(cached.sizes(), expected.sizes());
  EXPECT_LT((cached - expected).abs().max().item<double>(), 1e-5) << case_name;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenGeneration, ::testing::ValuesIn(every_case()));

TEST(KvCache, BatchRowsAtTheirOwnPositionsEqualEachRowAlone) {
  auto c = load_fixture("llama3_untied_ga2");
  torch::NoGradGuard no_grad;
  const auto a = head(sample_tokens("llama3_untied_ga2", 0), 12), b = head(sample_tokens("llama3_untied_ga2", 1), 12);
  auto last_logits = [&](const std::vector<std::vector<std::int64_t>>& rows) {
    const auto batch = static_cast<std::int64_t>(rows.size());
    ft::role_of<ft::ModelKvCache>(*c.model)->setup_caches(batch, 16);
    ft::ModelInput prefill;
    std::vector<std::int64_t> flat;
    for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.begin() + 8);
    prefill.tokens = torch::tensor(flat).view({batch, 8});
    prefill.input_pos = torch::arange(8).repeat({batch, 1});
    c.model->forward(prefill);
    torch::Tensor out;
    for (std::int64_t pos = 8; pos < 12; ++pos) {
      ft::ModelInput step;
      std::vector<std::int64_t> next;
      for (const auto& r : rows) next.push_back(r[static_cast<std::size_t>(pos)]);
      step.tokens = torch::tensor(next).view({batch, 1});
      step.input_pos = torch::full({batch, 1}, pos, torch::kLong);
      out = c.model->forward(step).logits.at(0).select(1, 0);
    }
    ft::role_of<ft::ModelKvCache>(*c.model)->remove_caches();
    return out;  // [batch, vocab]
  };
  const torch::Tensor together = last_logits({a, b});
  EXPECT_LT((together[0] - last_logits({a})[0]).abs().max().item<double>(), 1e-5);
  EXPECT_LT((together[1] - last_logits({b})[0]).abs().max().item<double>(), 1e-5);
}

TEST(KvCache, RefusesWhatItCannotDoAndLeavesTheTrainingForwardUntouched) {
  auto c = load_fixture("llama3_untied_ga2");
  ASSERT_NE(ft::role_of<ft::ModelKvCache>(*c.model), nullptr);
  EXPECT_EQ(c.model->max_seq_len(), 256);
  torch::NoGradGuard no_grad;
  ft::ModelInput full;
  full.tokens = torch::tensor(head(sample_tokens("llama3_untied_ga2", 0), 16)).view({1, 16});
  const torch::Tensor before = c.model->forward(full).logits.at(0);

  EXPECT_NE(fttest::error_of<ft::Error>([&] {
              ft::role_of<ft::ModelKvCache>(*c.model)->setup_caches(1, 257);
            }).find("exceeds max_seq_len 256"),
            std::string::npos);
  ft::role_of<ft::ModelKvCache>(*c.model)->setup_caches(1, 8);
  EXPECT_NE(fttest::error_of<ft::Error>([&] { c.model->forward(full); }).find("needs input_pos"), std::string::npos);
  ft::ModelInput too_far;
  too_far.tokens = full.tokens.narrow(1, 0, 1);
  too_far.input_pos = torch::full({1, 1}, 8, torch::kLong);
  EXPECT_NE(fttest::error_of<ft::Error>([&] { c.model->forward(too_far); }).find("outside the cache's 8 positions"),
            std::string::npos);
  ft::role_of<ft::ModelKvCache>(*c.model)->remove_caches();
  EXPECT_TRUE(torch::equal(c.model->forward(full).logits.at(0), before));
}

TEST(Generation, SeededSamplingRepeatsAndDifferentSeedsDiffer) {
  auto c = load_fixture("llama31_tied_clip");
  const auto prompt = head(sample_tokens("llama31_tied_clip", 0), 8);
  auto sampled = [&](std::uint64_t seed, bool kv_cache) {
    fthost::TokenSampler sampler({1.0, 50, 0.95}, seed);
    return run(*c.model, kv_cache, prompt, sampler, {32, {}}).tokens;
  };
  const auto first = sampled(7, true);
  EXPECT_EQ(first, sampled(7, true));
  EXPECT_EQ(first, sampled(7, false));  // the same logits, so the same draws
  EXPECT_NE(first, sampled(8, true));
  EXPECT_NE(first, greedy(*c.model, true, prompt, 32).tokens);
}

TEST(Generation, AStopTokenEndsTheAnswerAndIsLeftOut) {
  auto c = load_fixture("llama3_untied_ga2");
  const auto prompt = head(sample_tokens("llama3_untied_ga2", 2), 10);
  const auto free_run = greedy(*c.model, true, prompt, 40);
  EXPECT_FALSE(free_run.stopped);
  EXPECT_EQ(free_run.steps, 40);
  // The first token that is new at its place past the start: stopping on it cuts the answer there.
  std::size_t cut = 2;
  while (cut < free_run.tokens.size() &&
         std::find(free_run.tokens.begin(), free_run.tokens.begin() + static_cast<std::ptrdiff_t>(cut),
                   free_run.tokens[cut]) != free_run.tokens.begin() + static_cast<std::ptrdiff_t>(cut))
    ++cut;
  ASSERT_LT(cut, free_run.tokens.size()) << "the free run repeats one prefix; pick another prompt";
  for (bool kv_cache : {true, false}) {
    const auto stopped = greedy(*c.model, kv_cache, prompt, 40, {free_run.tokens[cut], 255});
    EXPECT_TRUE(stopped.stopped);
    EXPECT_EQ(stopped.tokens, head(free_run.tokens, cut));
    EXPECT_EQ(stopped.steps, static_cast<std::int64_t>(cut) + 1);
  }
}

TEST(Generation, TheFixtureDirectorysEosTokenIdStops) {
  EXPECT_EQ(load_fixture("llama3_untied_ga2").config_stop_tokens, (std::vector<std::int64_t>{2}));
}

TEST(Generation, AnswersStopAtTheModelsMaxSeqLen) {
  auto c = load_fixture("llama3_untied_ga2");
  const auto prompt = head(sample_tokens("llama3_untied_ga2", 0), 10);
  fthost::TokenSampler sampler({}, 0);
  fthost::NextTokenLogits logits(*c.model, true, 14);
  const auto g = fthost::generate(logits, prompt, sampler, {100, {}});
  // Positions 10..13 take the first four answer tokens; the fifth is read off position 13.
  EXPECT_EQ(g.tokens.size(), 5u);
  EXPECT_FALSE(g.stopped);
}

}  // namespace
