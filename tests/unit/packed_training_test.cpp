// Packing must not change what the model computes: a pack of documents with
// padded_collate_packed's document lengths (attention within each document, no [s, s] mask) and
// per-document positions gives every document the same loss as running it alone, and so does the
// block-causal mask the host builds for a model that takes no document lengths (the real Llama
// plugin, through the host's PluginLoader).
// And the real fthost binary finetunes a tiny Llama 3 on Alpaca records through the Llama 3
// tokenizer.json, packed and unpacked, with the loss falling, and packed split over 2
// context-parallel ranks as on one.
#include "text_data_support.h"

#include <ft/collate.h>
#include <ft/model.h>

#include <torch/torch.h>

#include <fstream>

namespace {

using fttest::quoted;

const char* const kTinyLlama3 =
    "[model]\n_component_ = \"torchtune.models.llama3.llama3\"\nvocab_size = 128256\nnum_layers = 2\n"
    "num_heads = 4\nnum_kv_heads = 2\nembed_dim = 64\nintermediate_dim = 128\nmax_seq_len = 512\n";

// Summed cross-entropy of positions [begin, end - 1) predicting labels [begin + 1, end).
double document_loss(const at::Tensor& logits, const at::Tensor& labels, std::int64_t begin, std::int64_t end) {
  auto l = logits.slice(0, begin, end - 1);
  auto t = labels.slice(0, begin + 1, end);
  return at::cross_entropy_loss(l, t, {}, at::Reduction::Sum, ft::kIgnoreIndex).item<double>();
}

TEST(PackedTraining, PackedDocumentsHaveTheirUnpackedLoss) {
  auto tok = fttest::llama3_json_tokenizer("max_seq_len = 512\n");
  const std::string source = "source = " + quoted(fttest::data_dir() + "/alpaca_tiny.json") + "\n";
  auto plain = fttest::make_dataset("torchtune.datasets.alpaca_dataset", source, tok);
  auto packed = fttest::make_dataset("torchtune.datasets.alpaca_dataset", source + "packed = true\n", tok);
  auto model = fttest::builtin_registry().instantiate<ft::Model>(fttest::config_root(kTinyLlama3).table("model"));
  torch::NoGradGuard no_grad;

  // The first pack after pack 0 holding at least two documents: positions must restart in it.
  std::size_t first_doc = 0, index = 0;
  auto real_documents = [](const ft::Sample& p) {
    std::size_t n = 0, at = 0;
    for (auto len : p.seq_lens) {
      if (p.tokens[at] != 0) ++n;  // padding is token 0; every document starts with BOS
      at += static_cast<std::size_t>(len);
    }
    return n;
  };
  for (index = 0; index < packed->size(); ++index) {
    if (index > 0 && real_documents(packed->get(index)) >= 2) break;
    first_doc += real_documents(packed->get(index));
  }
  ASSERT_LT(index, packed->size());
  const auto pack = packed->get(index);
  auto packed_batch = fttest::make_collate("torchtune.data.padded_collate_packed", 0)->collate({pack});
  EXPECT_FALSE(packed_batch.mask.defined());  // no s x s booleans for a pack
  ASSERT_EQ(packed_batch.document_lengths, (std::vector<std::vector<std::int64_t>>{pack.seq_lens}));
  ASSERT_TRUE(model->attends_within_documents());
  const auto packed_logits =
      model->forward({packed_batch.tokens, packed_batch.input_pos, {}, packed_batch.document_lengths}).logits.at(0)[0];
  const at::Tensor dense_mask = ft::block_causal_mask(packed_batch.document_lengths, packed_batch.tokens.size(1));
  const auto masked_logits =
      model->forward({packed_batch.tokens, packed_batch.input_pos, dense_mask, {}}).logits.at(0)[0];
  auto sft = fttest::make_collate("torchtune.data.padded_collate_sft", tok->pad_id());

  std::int64_t start = 0;
  int compared = 0;
  for (std::size_t d = 0; d < pack.seq_lens.size(); ++d) {
    const auto len = pack.seq_lens[d];
    if (pack.tokens[start] == 0) break;  // the padding
    const auto doc = plain->get(first_doc + d);
    ASSERT_EQ(static_cast<std::int64_t>(doc.tokens.size()), len);
    auto alone = sft->collate({doc});
    const auto alone_logits = model->forward({alone.tokens, {}, {}, {}}).logits.at(0)[0];
    const double expected = document_loss(alone_logits, alone.labels[0], 0, len);
    const double got = document_loss(packed_logits, packed_batch.labels[0], start, start + len);
    EXPECT_NEAR(got, expected, 1e-4 * std::abs(expected)) << "document " << d;
    const double got_masked = document_loss(masked_logits, packed_batch.labels[0], start, start + len);
    EXPECT_NEAR(got_masked, expected, 1e-4 * std::abs(expected)) << "document " << d << " under the dense mask";
    EXPECT_GT(expected, 0.0);
    start += len;
    ++compared;
  }
  EXPECT_GE(compared, 2);
}

std::vector<double> logged_losses(const std::string& metrics_path) {
  std::vector<double> losses;
  std::ifstream in(metrics_path);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("loss")) losses.push_back(j["loss"].get<double>());
  }
  return losses;
}

std::string alpaca_run_config(const std::string& out, bool packed, bool names_collate_fn = true) {
  std::string c =
      "output_dir = " + quoted(out) +
      "\nseed = 0\nepochs = 1\nmax_steps_per_epoch = 12\nbatch_size = " + (packed ? "2" : "4") +
      "\nshuffle = true\nnum_threads = 2\n" +
      (packed && names_collate_fn ? "collate_fn = \"torchtune.data.padded_collate_packed\"\n" : "") + "\n" +
      kTinyLlama3 + "\n[tokenizer]\n_component_ = \"torchtune.models.llama3.llama3_tokenizer\"\npath = " +
      quoted(fttest::tokenizers_dir() + "/llama3/tokenizer.json") +
      "\nmax_seq_len = 256\n"
      "\n[dataset]\n_component_ = \"torchtune.datasets.alpaca_dataset\"\nsource = " +
      quoted(fttest::data_dir() + "/alpaca_tiny.json") +
      "\ntrain_on_input = false\npacked = " + (packed ? "true" : "false") +
      "\n"
      "\n[checkpointer]\n_component_ = \"torchtune.training.FullModelHFCheckpointer\"\ncheckpoint_dir = \"\"\n"
      "model_type = \"LLAMA3\"\noutput_dir = " +
      quoted(out) +
      "\n"
      "\n[loss]\n_component_ = \"torchtune.modules.loss.CEWithChunkedOutputLoss\"\n"
      "\n[optimizer]\n_component_ = \"torch.optim.AdamW\"\nlr = 1e-2\n"
      "\n[metric_logger]\n_component_ = \"torchtune.training.metric_logging.DiskLogger\"\nlog_dir = " +
      quoted(out + "/logs") + "\nfilename = \"metrics.jsonl\"\noutput_fmt = \"jsonl\"\n";
  return c;
}

class AlpacaEndToEnd : public ::testing::TestWithParam<bool> {};

TEST_P(AlpacaEndToEnd, TinyLlama3LossFalls) {
  const std::string out = fttest::temp_dir();
  const auto config = fttest::write_temp("run.toml", alpaca_run_config(out, GetParam()));
  const auto result = fttest::run_fthost("--config " + config);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto losses = logged_losses(out + "/logs/metrics.jsonl");
  ASSERT_EQ(losses.size(), 12u) << result.output;
  const double first = (losses[0] + losses[1]) / 2, last = (losses[10] + losses[11]) / 2;
  EXPECT_LT(last, 0.75 * first) << "losses did not fall: first " << first << ", last " << last;
}

INSTANTIATE_TEST_SUITE_P(Packing, AlpacaEndToEnd, ::testing::Bool(),
                         [](const auto& param_info) { return param_info.param ? "packed" : "unpacked"; });

// torchtune collates packed data with padded_collate_packed without being told; so does fthost.
TEST(PackedTraining, WithoutCollateFnEqualsWithIt) {
  std::vector<std::vector<double>> runs;
  for (bool names_collate_fn : {true, false}) {
    const std::string out = fttest::temp_dir();
    const auto config = fttest::write_temp("run.toml", alpaca_run_config(out, true, names_collate_fn));
    const auto result = fttest::run_fthost("--config " + config + " max_steps_per_epoch=3");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    runs.push_back(logged_losses(out + "/logs/metrics.jsonl"));
  }
  ASSERT_EQ(runs[0].size(), 3u);
  EXPECT_EQ(runs[0], runs[1]);
}

// Packs split over 2 context-parallel ranks (documents crossing the chunk and rank boundaries)
// train as on one rank: the same token counts, the same losses to float32 rounding.
TEST(PackedTraining, ContextParallelRanksTrainAsOneRank) {
  std::vector<std::vector<double>> runs;
  std::vector<std::string> token_counts;
  for (const std::string ranks : {"", "--nproc-per-node 2 context_parallel_dim=2 num_threads=1"}) {
    const std::string out = fttest::temp_dir();
    const auto config = fttest::write_temp("run.toml", alpaca_run_config(out, true));
    const auto result = fttest::run_fthost("--config " + config + " max_steps_per_epoch=3 " + ranks);
    ASSERT_EQ(result.exit_code, 0) << result.output;
    runs.push_back(logged_losses(out + "/logs/metrics.jsonl"));
    std::string counts;
    std::ifstream in(out + "/logs/metrics.jsonl");
    for (std::string line; std::getline(in, line);) counts += nlohmann::json::parse(line)["num_tokens"].dump() + " ";
    token_counts.push_back(counts);
  }
  ASSERT_EQ(runs[0].size(), 3u);
  ASSERT_EQ(runs[1].size(), 3u);
  EXPECT_EQ(token_counts[1], token_counts[0]);
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_NEAR(runs[1][i], runs[0][i], 2e-5 * std::abs(runs[0][i])) << "step " << i + 1;
}

}  // namespace
