// The configurations under configs/ as a user runs them through the fthost binary: every one
// passes `fthost validate` as shipped and with its paths pointed at local files, and torchtune's
// own llama3_2/1B_full and qwen2_5/0.5B_full YAML files train with a tiny model swapped in.
#include "text_data_support.h"

#include <boost/filesystem.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>

namespace {

namespace fs = boost::filesystem;
using fttest::quoted;

const std::string kConfigs = std::string(FT_SOURCE_DIR) + "/configs";

fttest::CommandResult fthost(const std::string& args) { return fttest::run_fthost(args); }

std::vector<std::string> shipped_configs(const std::string& extension) {
  std::vector<std::string> found;
  for (auto& e : fs::recursive_directory_iterator(kConfigs))
    if (e.path().extension() == extension) found.push_back(e.path().string());
  std::sort(found.begin(), found.end());
  return found;
}

// The torchtune full_finetune_distributed configs ported under configs/.
const std::vector<std::string> kPortedConfigs = {
    "llama2/7B_full",    "llama2/13B_full", "llama3/8B_full",  "llama3_1/8B_full", "llama3_2/1B_full",
    "llama3_2/3B_full",  "qwen2/0.5B_full", "qwen2/1.5B_full", "qwen2/7B_full",    "qwen2_5/0.5B_full",
    "qwen2_5/1.5B_full", "qwen2_5/3B_full", "qwen2_5/7B_full"};

TEST(ShippedConfigs, EveryPortedTorchtuneConfigIsShipped) {
  for (const auto& name : kPortedConfigs) EXPECT_TRUE(fs::exists(kConfigs + "/" + name + ".yaml")) << name;
  EXPECT_EQ(shipped_configs(".yaml").size(), kPortedConfigs.size());
}

TEST(ShippedConfigs, EveryConfigValidatesAsShipped) {
  int checked = 0;
  for (const auto& ext : {".yaml", ".toml"}) {
    for (const auto& config : shipped_configs(ext)) {
      auto r = fthost("validate --config " + config);
      EXPECT_EQ(r.exit_code, 0) << config << "\n" << r.output;
      ++checked;
    }
  }
  EXPECT_GE(checked, static_cast<int>(kPortedConfigs.size()));
}

// The Qwen vocab.json + merges.txt pair torchtune's Qwen configs name, written from the Qwen
// fixture's tokenizer.json.
std::string qwen_vocab_merges_overrides() {
  static const std::string overrides = [] {
    const auto json = fttest::read_json_file(fttest::tokenizers_dir() + "/qwen3/tokenizer.json");
    const std::string vocab = fttest::write_temp("vocab.json", json.at("model").at("vocab").dump());
    std::string merges = "#version: 0.2\n";
    for (const auto& m : json.at("model").at("merges"))
      merges += (m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>()) + "\n";
    return " tokenizer.path=" + vocab + " tokenizer.merges_file=" + fttest::write_temp("merges.txt", merges);
  }();
  return overrides;
}

// Points every path of a ported config at the fixtures: tokenizer files of its family, the
// Alpaca sample as both the training and the validation data, and `checkpoint_dir`.
std::string path_overrides(const std::string& name, const std::string& checkpoint_dir) {
  std::string tokenizer;
  if (name.rfind("qwen", 0) == 0)
    tokenizer = qwen_vocab_merges_overrides();
  else if (name.rfind("llama2", 0) == 0)
    tokenizer = " tokenizer.path=" + fttest::tokenizers_dir() + "/llama2/tokenizer.json";
  else
    tokenizer = " tokenizer.path=" + fttest::tokenizers_dir() + "/llama3/tokenizer.json";
  const std::string alpaca = fttest::data_dir() + "/alpaca_tiny.json";
  return tokenizer + " dataset.source=" + alpaca + " dataset_val.source=" + alpaca +
         " checkpointer.checkpoint_dir=" + checkpoint_dir;
}

TEST(ShippedConfigs, PortedConfigsValidateWithOnlyTheirPathsPointedAtLocalFiles) {
  for (const auto& name : kPortedConfigs) {
    auto r = fthost("validate --config " + kConfigs + "/" + name + ".yaml" + path_overrides(name, "/tmp/local-model"));
    EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.output;
  }
}

// A tiny model of the config's family in place of its named size (the one non-path change), with
// the vocabulary of the fixture tokenizer.
std::string tiny_model(const std::string& name) {
  const bool qwen = name.rfind("qwen", 0) == 0;
  return std::string(" model._component_=") +
         (qwen ? "torchtune.models.qwen2.qwen2" : "torchtune.models.llama3.llama3") +
         " model.vocab_size=" + (qwen ? "151936" : "128256") +
         " model.num_layers=2 model.num_heads=4 model.num_kv_heads=2 model.embed_dim=64 model.intermediate_dim=128"
         " model.max_seq_len=256" +
         (qwen ? " model.tie_word_embeddings=true" : "");
}

std::vector<double> logged_losses(const std::string& log_dir) {
  std::vector<double> losses;
  if (!fs::exists(log_dir)) return losses;
  for (auto& e : fs::directory_iterator(log_dir)) {
    std::ifstream in(e.path().string());
    for (std::string line; std::getline(in, line);) {
      const auto j = nlohmann::json::parse(line);
      if (j.contains("loss")) losses.push_back(j.at("loss").get<double>());
    }
  }
  return losses;
}

class TorchtuneYamlTrains : public ::testing::TestWithParam<std::string> {};

// torchtune's YAML as shipped, run twice through the binary: once from the tiny model's seeded
// initialisation to write a Hugging Face checkpoint directory, then from that directory with only
// the paths (and the tiny model) changed, as a user points the config at a downloaded model.
TEST_P(TorchtuneYamlTrains, FromALocalCheckpointWithALossThatFalls) {
  const std::string name = GetParam();
  const std::string config = kConfigs + "/" + name + ".yaml";
  const std::string dir = fttest::temp_dir();
  const std::string short_run =
      " tokenizer.max_seq_len=256 epochs=1 gradient_accumulation_steps=1"
      " metric_logger.output_fmt=jsonl";

  auto init =
      fthost("--config " + config + " output_dir=" + dir + "/init" + tiny_model(name) + path_overrides(name, "'\"\"'") +
             " 'checkpointer.checkpoint_files=[]' max_steps_per_epoch=1" + " optimizer.lr=0" + short_run);
  ASSERT_EQ(init.exit_code, 0) << init.output;
  const std::string checkpoint = dir + "/init/epoch_0";
  ASSERT_TRUE(fs::exists(checkpoint + "/model.safetensors")) << init.output;

  auto r = fthost("--config " + config + " output_dir=" + dir + "/run model._component_=fthost.models.from_hf_config" +
                  " model.path=" + checkpoint + "/config.json" + path_overrides(name, checkpoint) +
                  " max_steps_per_epoch=8 optimizer.lr=3e-3" + short_run);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("weights from the checkpoint"), std::string::npos) << r.output;
  const auto losses = logged_losses(dir + "/run/logs");
  ASSERT_EQ(losses.size(), 8u) << r.output;
  for (double loss : losses) EXPECT_TRUE(std::isfinite(loss)) << r.output;
  // From random weights the first loss is near ln(vocabulary) (~11.8); a few steps must cut it.
  EXPECT_GT(losses.front(), 10.0) << r.output;
  EXPECT_LT(losses.back(), losses.front() - 0.5) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Configs, TorchtuneYamlTrains, ::testing::Values("llama3_2/1B_full", "qwen2_5/0.5B_full"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
