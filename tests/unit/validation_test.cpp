// Validation during training (dataset_val, batch_size_val, run_val_every_n_steps) and log_level,
// through the fthost binary on the golden fixtures. The fixtures' initial.json holds
// `dataset_loss`, computed independently in PyTorch: the token-weighted loss of the initial
// weights over the whole data file. With lr = 0 the weights never move, so every val_loss of a
// run validating on that file must be it, whatever the batching and the number of ranks.
#include "golden_cases.h"
#include "test_helpers.h"
#include "train/validation_loop.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace fttest::golden;

const char* kChunked = "torchtune.modules.loss.CEWithChunkedOutputLoss";

std::string case_data(const std::string& case_name) {
  const json c = read_json(golden_dir() + "/cases.json").at(case_name);
  return golden_dir() + "/" + c.at("fixture").get<std::string>() + "/data.jsonl";
}

double dataset_loss(const std::string& case_name) {
  return read_json(golden_dir() + "/" + case_name + ".initial.json").at("dataset_loss").get<double>();
}

std::string validation_on(const std::string& source) {
  return " dataset_val._component_=fthost.datasets.tokenized_jsonl dataset_val.source=" + source;
}

std::vector<json> rows_with(const std::vector<json>& rows, const char* key) {
  std::vector<json> out;
  std::copy_if(rows.begin(), rows.end(), std::back_inserter(out), [&](const json& r) { return r.contains(key); });
  return out;
}

struct ValidationCase {
  std::string name;  // test name
  std::string golden;
  std::string loss;
  int ranks;
  std::string parallelism;  // component, for several ranks
};

std::ostream& operator<<(std::ostream& os, const ValidationCase& c) { return os << c.name; }

class ValidationLoss : public ::testing::TestWithParam<ValidationCase> {};

// batch_size_val = 5 divides none of the sets (48 and 32 samples, 24 / 16 per rank of two,
// 11 / 11 / 10 per rank of three): short last batches, and with three ranks unequal shares.
TEST_P(ValidationLoss, IsTheWholeDatasetLossOfTheUnchangedWeights) {
  const ValidationCase& c = GetParam();
  const std::string out = fttest::temp_dir();
  const std::string config = fttest::write_temp("run.toml", config_for(c.golden, c.loss, out));
  std::string args = "--config " + config + " optimizer.lr=0 run_val_every_n_steps=1 batch_size_val=5" +
                     validation_on(case_data(c.golden));
  if (c.ranks > 1)
    args = "--nproc-per-node " + std::to_string(c.ranks) + " " + args + " parallelism._component_=" + c.parallelism;
  const auto r = fttest::run_fthost(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;

  const auto rows = read_jsonl(out + "/logs/metrics.jsonl");
  const auto steps = rows_with(rows, "loss");
  const auto validations = rows_with(rows, "val_loss");
  ASSERT_GT(steps.size(), 1u) << r.output;
  ASSERT_EQ(validations.size(), steps.size()) << r.output;  // after every step
  const double expected = dataset_loss(c.golden);
  for (std::size_t i = 0; i < validations.size(); ++i) {
    SCOPED_TRACE("validation " + std::to_string(i + 1));
    EXPECT_EQ(validations[i].at("step").get<int>(), steps[i].at("step").get<int>());
    EXPECT_NEAR(validations[i].at("val_loss").get<double>(), expected, 1e-4);
  }
  // The step's training loss over its own samples is not the whole set's.
  EXPECT_NE(steps[0].at("loss").get<double>(), validations[0].at("val_loss").get<double>());
  EXPECT_NE(r.output.find("|val_loss: "), std::string::npos) << "progress line\n" << r.output;
}

std::vector<ValidationCase> validation_cases() {
  std::vector<ValidationCase> cases;
  for (const char* golden : {"llama3_untied_ga2", "llama31_tied_clip", "qwen2_tied_ga2_clip"}) {
    for (const char* loss : {"torch.nn.CrossEntropyLoss", kChunked, "torchtune.modules.loss.LinearCrossEntropyLoss"}) {
      const std::string loss_name = std::string(loss).substr(std::string(loss).rfind('.') + 1);
      cases.push_back({std::string(golden) + "_" + loss_name, golden, loss, 1, ""});
    }
    cases.push_back({std::string(golden) + "_fsdp_2ranks", golden, kChunked, 2, "fthost.parallelism.fsdp"});
  }
  cases.push_back({"llama3_untied_ga2_ddp_2ranks", "llama3_untied_ga2", kChunked, 2, "fthost.parallelism.ddp"});
  // 32 samples over 3 ranks: 11, 11 and 10, so the third rank evaluates one padding sample.
  cases.push_back({"llama31_tied_clip_fsdp_3ranks", "llama31_tied_clip", kChunked, 3, "fthost.parallelism.fsdp"});
  cases.push_back({"llama31_tied_clip_ddp_3ranks", "llama31_tied_clip", "torchtune.modules.loss.LinearCrossEntropyLoss",
                   3, "fthost.parallelism.ddp"});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Golden, ValidationLoss, ::testing::ValuesIn(validation_cases()),
                         [](const auto& param_info) { return param_info.param.name; });

// Sample i is the single token i.
class IndexDataset final : public ft::Dataset {
 public:
  explicit IndexDataset(std::size_t size) : size_(size) {}
  std::size_t size() const override { return size_; }
  ft::Sample get(std::size_t index) const override {
    ft::Sample s;
    s.tokens = {static_cast<std::int64_t>(index)};
    s.labels = s.tokens;
    return s;
  }

 private:
  std::size_t size_;
};

// Every sample of the set is counted exactly once over the ranks, and every rank runs the same
// number of batches (a sharded forward is collective).
TEST(ValidationShard, CountsEverySampleOnceWithEqualBatchCounts) {
  for (std::size_t n : {1u, 5u, 31u, 32u, 33u}) {
    for (int ranks : {1, 2, 3, 4}) {
      for (std::int64_t batch : {1, 2, 5}) {
        SCOPED_TRACE("n " + std::to_string(n) + ", ranks " + std::to_string(ranks) + ", batch " +
                     std::to_string(batch));
        std::map<std::int64_t, int> counted;
        std::set<std::size_t> batch_counts;
        for (int rank = 0; rank < ranks; ++rank) {
          fthost::DataLoader loader(std::make_shared<IndexDataset>(n), nullptr,
                                    fthost::in_dataset_order(batch, /*workers=*/0, rank, ranks));
          const std::size_t own = fthost::validation_samples_counted(n, rank, ranks);
          std::size_t position = 0, batches = 0;
          for (loader.start_epoch(0); !loader.epoch_done(); ++batches) {
            const fthost::LoadedBatch b = loader.next();
            EXPECT_LE(b.samples.size(), static_cast<std::size_t>(batch));
            for (const auto& sample : b.samples)
              if (position++ < own) ++counted[sample.tokens.at(0)];
          }
          batch_counts.insert(batches);
        }
        EXPECT_EQ(batch_counts.size(), 1u);
        ASSERT_EQ(counted.size(), n);
        for (const auto& [index, times] : counted) EXPECT_EQ(times, 1) << "sample " << index;
      }
    }
  }
}

// Training with validation is bitwise training without it: same losses, norms, final weights.
// `extra`: more arguments for both runs.
void expect_validation_leaves_training_unchanged(const std::string& extra) {
  const char* golden = "llama31_tied_clip";  // shuffled and clipped
  const std::string plain = fttest::temp_dir(), validated = fttest::temp_dir();
  const auto a = fttest::run_fthost("--config " + fttest::write_temp("run.toml", config_for(golden, kChunked, plain)) +
                                    " epochs=2" + extra);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const auto b = fttest::run_fthost(
      "--config " + fttest::write_temp("run.toml", config_for(golden, kChunked, validated)) +
      " epochs=2 run_val_every_n_steps=3 batch_size_val=3" + validation_on(case_data(golden)) + extra);
  ASSERT_EQ(b.exit_code, 0) << b.output;

  const auto reference = read_jsonl(plain + "/logs/metrics.jsonl");
  const auto rows = read_jsonl(validated + "/logs/metrics.jsonl");
  const auto steps = rows_with(rows, "loss");
  ASSERT_EQ(steps.size(), reference.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i + 1));
    for (const char* key : {"step", "loss", "lr", "grad_norm", "num_tokens"})
      EXPECT_EQ(steps[i].at(key).get<double>(), reference[i].at(key).get<double>()) << key;
  }
  // Every third step, and the last step of each of the two epochs.
  const auto validations = rows_with(rows, "val_loss");
  const int steps_per_epoch = static_cast<int>(reference.size()) / 2;
  std::vector<int> expected_steps;
  for (int step = 1; step <= static_cast<int>(reference.size()); ++step)
    if (step % 3 == 0 || step % steps_per_epoch == 0) expected_steps.push_back(step);
  ASSERT_EQ(validations.size(), expected_steps.size());
  for (std::size_t i = 0; i < validations.size(); ++i)
    EXPECT_EQ(validations[i].at("step").get<int>(), expected_steps[i]);
  // The weights moved, so the losses of later validations are not the initial weights'.
  EXPECT_GT(std::abs(validations.back().at("val_loss").get<double>() - dataset_loss(golden)), 1e-3);
  for (const char* epoch : {"epoch_0", "epoch_1"}) {
    EXPECT_TRUE(fttest::read_file(plain + "/" + epoch + "/model.safetensors") ==
                fttest::read_file(validated + "/" + epoch + "/model.safetensors"))
        << epoch;
  }
}

TEST(Validation, LeavesTrainingBitwiseUnchanged) { expect_validation_leaves_training_unchanged(""); }

TEST(Validation, LeavesShardedTrainingBitwiseUnchanged) {
  expect_validation_leaves_training_unchanged(
      " --nproc-per-node 2 batch_size=1 parallelism._component_=fthost.parallelism.fsdp");
}

// A run resumed from a mid-run checkpoint with validation on continues the uninterrupted run:
// its steps, its validations and its final weights, bit for bit.
TEST(Validation, ResumedRunValidatesAndTrainsAsTheUninterruptedOne) {
  const char* golden = "qwen2_tied_ga2_clip";  // shuffled, accumulating, warmup + cosine
  const std::string validation =
      " epochs=2 max_steps_per_epoch=6 run_val_every_n_steps=2" + validation_on(case_data(golden));
  const std::string full = fttest::temp_dir(), resumed = fttest::temp_dir();
  const auto a = fttest::run_fthost("--config " + fttest::write_temp("run.toml", config_for(golden, kChunked, full)) +
                                    validation + " save_every_n_steps=3");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const auto b =
      fttest::run_fthost("--config " + fttest::write_temp("run.toml", config_for(golden, kChunked, resumed)) +
                         validation + " resume_from_checkpoint=" + full + "/step_9");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const auto reference = read_jsonl(full + "/logs/metrics.jsonl");
  const auto rows = read_jsonl(resumed + "/logs/metrics.jsonl");
  std::vector<json> rest;
  std::copy_if(reference.begin(), reference.end(), std::back_inserter(rest),
               [](const json& r) { return r.at("step").get<int>() > 9; });
  ASSERT_EQ(rows.size(), rest.size()) << b.output;
  ASSERT_EQ(rows_with(rows, "val_loss").size(), 2u);  // after steps 10 and 12
  for (std::size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE("row " + std::to_string(i));
    for (const char* key : {"step", "loss", "lr", "grad_norm", "num_tokens", "val_loss"}) {
      ASSERT_EQ(rows[i].contains(key), rest[i].contains(key)) << key;
      if (!rows[i].contains(key)) continue;
      EXPECT_EQ(rows[i].at(key).get<double>(), rest[i].at(key).get<double>()) << key;
    }
  }
  EXPECT_TRUE(fttest::read_file(resumed + "/epoch_1/model.safetensors") ==
              fttest::read_file(full + "/epoch_1/model.safetensors"));
}

// Every configured logger gets val_loss: a JSONL and a text disk logger side by side.
TEST(Validation, EveryMetricLoggerReceivesValLoss) {
  const std::string out = fttest::temp_dir();
  std::string toml = config_for("llama3_untied_ga2", kChunked, out);
  const auto at = toml.find("[metric_logger]\n");
  ASSERT_NE(at, std::string::npos);
  toml = toml.substr(0, at) +
         "[[metric_logger]]\n_component_ = \"torchtune.training.metric_logging.DiskLogger\"\nlog_dir = \"" + out +
         "/text\"\nfilename = \"metrics.txt\"\n\n[[metric_logger]]\n" + toml.substr(at + 16);
  const auto r = fttest::run_fthost("--config " + fttest::write_temp("run.toml", toml) +
                                    " max_steps_per_epoch=4 run_val_every_n_steps=2" +
                                    validation_on(case_data("llama3_untied_ga2")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto validations = rows_with(read_jsonl(out + "/logs/metrics.jsonl"), "val_loss");
  ASSERT_EQ(validations.size(), 2u);
  const std::string text = fttest::read_file(out + "/text/metrics.txt");
  for (const json& v : validations) {
    const std::string step = "Step " + std::to_string(v.at("step").get<int>()) + " | val_loss:";
    EXPECT_NE(text.find(step), std::string::npos) << step << "\n" << text;
  }
}

TEST(Validation, DatasetValAloneIsBuiltButNeverRun) {
  const std::string out = fttest::temp_dir();
  const auto r =
      fttest::run_fthost("--config " + fttest::write_temp("run.toml", config_for("llama3_untied_ga2", kChunked, out)) +
                         " max_steps_per_epoch=2" + validation_on(case_data("llama3_untied_ga2")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("run_val_every_n_steps is not set"), std::string::npos) << r.output;
  EXPECT_TRUE(rows_with(read_jsonl(out + "/logs/metrics.jsonl"), "val_loss").empty());
}

TEST(Validation, RefusesInconsistentKeys) {
  const std::string out = fttest::temp_dir();
  const std::string config = fttest::write_temp("run.toml", config_for("llama3_untied_ga2", kChunked, out));
  const std::string data = case_data("llama3_untied_ga2");
  struct Refusal {
    std::string args, key, words;
  };
  for (const Refusal& c : std::vector<Refusal>{
           {" run_val_every_n_steps=2", "run_val_every_n_steps", "dataset_val is not configured"},
           {" run_val_every_n_steps=0" + validation_on(data), "run_val_every_n_steps", "expected an integer >= 1"},
           {" batch_size_val=0" + validation_on(data), "batch_size_val", "expected an integer >= 1"},
           {" dataset_val=3", "dataset_val", "component table"},
           {validation_on(data) + " dataset_val.packed=true", "dataset_val", "set the same packed value"},
       }) {
    SCOPED_TRACE(c.args);
    for (const char* command : {"validate", "run"}) {
      const auto r = fttest::run_fthost(std::string(command) + " --config " + config + c.args);
      EXPECT_EQ(r.exit_code, 2) << r.output;
      EXPECT_NE(r.output.find(c.key), std::string::npos) << r.output;
      EXPECT_NE(r.output.find(c.words), std::string::npos) << r.output;
    }
  }
}

TEST(LogLevel, RefusesAnUnknownLevelNamingTheKeyAndTheLevels) {
  const std::string out = fttest::temp_dir();
  const std::string config = fttest::write_temp("run.toml", config_for("llama3_untied_ga2", kChunked, out));
  for (const char* command : {"validate", "run"}) {
    const auto r = fttest::run_fthost(std::string(command) + " --config " + config + " log_level=VERBOSE");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("log_level"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("\"VERBOSE\""), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("DEBUG, INFO, WARNING (or WARN), ERROR, CRITICAL"), std::string::npos) << r.output;
  }
}

// torchtune's configs write `log_level: INFO`; any case names a level.
TEST(LogLevel, SetsHowMuchTheRunLogs) {
  const std::string data = case_data("llama3_untied_ga2");
  auto run = [&](const std::string& level) {
    const std::string out = fttest::temp_dir();
    return fttest::run_fthost(
        "--config " + fttest::write_temp("run.toml", config_for("llama3_untied_ga2", kChunked, out)) +
        " max_steps_per_epoch=2 run_val_every_n_steps=2" + validation_on(data) + " log_level=" + level);
  };
  const auto info = run("INFO");
  ASSERT_EQ(info.exit_code, 0) << info.output;
  EXPECT_NE(info.output.find(" info effective config"), std::string::npos) << info.output;
  EXPECT_NE(info.output.find("val_loss"), std::string::npos) << info.output;
  EXPECT_EQ(info.output.find(" debug "), std::string::npos) << info.output;

  const auto warning = run("warning");
  ASSERT_EQ(warning.exit_code, 0) << warning.output;
  EXPECT_EQ(warning.output.find(" info "), std::string::npos) << warning.output;

  const auto debug = run("Debug");
  ASSERT_EQ(debug.exit_code, 0) << debug.output;
  EXPECT_NE(debug.output.find(" debug validation: this rank counts 48 of the 48 samples"), std::string::npos)
      << debug.output;
}

}  // namespace
