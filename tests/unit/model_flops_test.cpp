// The logged tflops_per_gpu and mfu, through a real run of the fthost binary: the FLOPs per
// position are worked out here by hand from the model's shape (torchtitan's formula), so the
// logged FLOP rate divided by the logged token rate must equal them times positions per trained
// token, whatever the machine's speed; and mfu must be that FLOP rate over the peak the log names,
// never above 1.
#include "golden_cases.h"
#include "test_helpers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace {

TEST(ModelFlops, LoggedFlopsFollowTheModelShapeAndMfuIsAFraction) {
  const std::string out = fttest::temp_dir() + "/model_flops_run";
  const std::string data = out + "_tokens.jsonl";
  constexpr int kSeqLen = 16, kSamples = 8;
  {
    std::ofstream f(data);
    for (int i = 0; i < kSamples; ++i) {
      std::string tokens;
      for (int j = 0; j < kSeqLen; ++j) tokens += (j ? "," : "") + std::to_string((i * 31 + j * 7) % 256);
      f << "{\"tokens\": [" << tokens << "], \"labels\": [" << tokens << "]}\n";
    }
  }
  std::ostringstream toml;
  toml << "output_dir = \"" << out << "\"\nseed = 0\nepochs = 1\nbatch_size = 2\nshuffle = false\n"
       << "dtype = \"fp32\"\nnum_threads = 1\nlog_every_n_steps = 1\n\n"
       << "[model]\n_component_ = \"torchtune.models.llama3.llama3\"\nvocab_size = 256\nnum_layers = 2\n"
       << "num_heads = 4\nnum_kv_heads = 2\nembed_dim = 64\nintermediate_dim = 128\nmax_seq_len = 64\n\n"
       << "[checkpointer]\n_component_ = \"torchtune.training.FullModelHFCheckpointer\"\ncheckpoint_dir = \"\"\n"
       << "model_type = \"LLAMA3\"\n\n"
       << "[dataset]\n_component_ = \"fthost.datasets.tokenized_jsonl\"\nsource = \"" << data << "\"\n\n"
       << "[loss]\n_component_ = \"torchtune.modules.loss.CEWithChunkedOutputLoss\"\n\n"
       << "[optimizer]\n_component_ = \"torch.optim.AdamW\"\nlr = 1e-3\n\n"
       << "[metric_logger]\n_component_ = \"torchtune.training.metric_logging.DiskLogger\"\n"
       << "log_dir = \"" << out << "/logs\"\nfilename = \"metrics.jsonl\"\noutput_fmt = \"jsonl\"\n";
  const auto result = fttest::run_fthost("--config " + fttest::write_temp("model_flops.toml", toml.str()));
  ASSERT_EQ(result.exit_code, 0) << result.output;

  // Per layer: q 64x4x16, k and v 64x2x16 each, o 4x16x64, SwiGLU 3x64x128; then the output
  // projection 256x64 (the embedding is a lookup). 6 x parameters + 12 x layers x heads x
  // head_dim x seq_len for attention.
  const double layer = 64.0 * 4 * 16 + 2 * 64.0 * 2 * 16 + 4.0 * 16 * 64 + 3 * 64.0 * 128;
  const double flops_per_position = 6 * (2 * layer + 256.0 * 64) + 12.0 * 2 * 4 * 16 * kSeqLen;
  // Every position but the last of each sequence is a trained token.
  const double positions_per_token = static_cast<double>(kSeqLen) / (kSeqLen - 1);

  const auto rows = fttest::golden::read_jsonl(out + "/logs/metrics.jsonl");
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(kSamples / 2));
  for (const auto& row : rows) {
    const double flops = row.at("tflops_per_gpu").get<double>() * 1e12;
    const double tokens_per_second = row.at("tokens_per_second_per_gpu").get<double>();
    EXPECT_NEAR(flops / tokens_per_second / (flops_per_position * positions_per_token), 1.0, 1e-9) << row.dump();
  }

  // The peak: measured at start on a CPU; raised (with a warning naming the step) when a step beat
  // it, since a busy machine can only have slowed the measurement.
  const std::regex start_peak(
      R"(mfu: peak ([0-9.]+) GFLOP/s \(measured: the fastest of 8 dense Float matmuls on cpu\))");
  const std::regex raised_peak(
      R"(mfu: step ([0-9]+) achieved [0-9.]+ GFLOP/s, above the measured peak \([0-9.]+\); .* the peak is now ([0-9.]+) GFLOP/s)");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(result.output, match, start_peak)) << result.output;
  std::map<int, double> peak_from_step{{1, std::stod(match[1]) * 1e9}};
  for (std::sregex_iterator it(result.output.begin(), result.output.end(), raised_peak), end; it != end; ++it)
    peak_from_step[std::stoi((*it)[1])] = std::stod((*it)[2]) * 1e9;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int step = static_cast<int>(i) + 1;
    const double peak = std::prev(peak_from_step.upper_bound(step))->second;
    const double flops = rows[i].at("tflops_per_gpu").get<double>() * 1e12;
    const double mfu = rows[i].at("mfu").get<double>();
    EXPECT_NEAR(mfu, flops / peak, 1e-6 * mfu + 1e-9) << rows[i].dump();  // the log prints the peak to 1e-6 GFLOP/s
    EXPECT_GT(mfu, 0.0) << rows[i].dump();
    EXPECT_LE(mfu, 1.0) << rows[i].dump();
  }
}

}  // namespace
