// The configurations under configs/ as a user runs them through the fthost binary: every one
// passes `fthost validate` as shipped and with its paths pointed at local files; torchtune's own
// llama3_2/1B_full and qwen2_5/0.5B_full YAML files train with a tiny model swapped in, and one
// YAML file of each newer family (Qwen 3, Gemma, Gemma 2, Mistral, Phi-3 and Phi-4) trains the
// family's tiny Hugging Face fixture that the ctest fixture family_goldens generates.
//
// The published tokenizer files of the newer families are the ones the tokenizer tests read
// (scripts/tokenizer_fixtures.py writes them into the build tree, next to family_goldens/).
#ifndef FT_TOKENIZER_FIXTURES_DIR
#define FT_TOKENIZER_FIXTURES_DIR FT_FAMILY_GOLDEN_DIR "/../tokenizer_fixtures"
#endif
#include "golden_cases.h"
#include "published_tokenizers.h"
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
const std::vector<std::string> kPortedConfigs = {"llama2/7B_full",
                                                 "llama2/13B_full",
                                                 "llama3/8B_full",
                                                 "llama3/70B_full",
                                                 "llama3_1/8B_full",
                                                 "llama3_1/70B_full",
                                                 "llama3_2/1B_full",
                                                 "llama3_2/3B_full",
                                                 "llama3_3/70B_full",
                                                 "llama3_3/70B_full_multinode",
                                                 "mistral/7B_full",
                                                 "gemma/2B_full",
                                                 "gemma/7B_full",
                                                 "gemma2/2B_full",
                                                 "gemma2/9B_full",
                                                 "gemma2/27B_full",
                                                 "phi3/mini_full",
                                                 "phi4/14B_full",
                                                 "qwen2/0.5B_full",
                                                 "qwen2/1.5B_full",
                                                 "qwen2/7B_full",
                                                 "qwen2_5/0.5B_full",
                                                 "qwen2_5/1.5B_full",
                                                 "qwen2_5/3B_full",
                                                 "qwen2_5/7B_full",
                                                 "qwen3/0.6B_full",
                                                 "qwen3/1.7B_full",
                                                 "qwen3/4B_full",
                                                 "qwen3/8B_full",
                                                 "llama4/scout_17B_16E_full",
                                                 "llama4/maverick_17B_128E_full",
                                                 "llama3_2_vision/11B_full",
                                                 "llama3_2_vision/90B_full"};

TEST(ShippedConfigs, EveryPortedTorchtuneConfigIsShipped) {
  EXPECT_EQ(kPortedConfigs.size(), 33u);
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

bool starts_with(const std::string& name, const char* prefix) { return name.rfind(prefix, 0) == 0; }

// The tokenizer files of a ported config's family: the shared fixtures' for Llama and Qwen 2 /
// 2.5, the published files the tokenizer tests read for the newer families.
std::string tokenizer_overrides(const std::string& name) {
  namespace published = fttest::published;
  if (starts_with(name, "qwen3/"))
    return " tokenizer.path=" + published::file("qwen3", "vocab.json") +
           " tokenizer.merges_file=" + published::file("qwen3", "merges.txt");
  if (starts_with(name, "qwen")) return qwen_vocab_merges_overrides();
  if (starts_with(name, "gemma")) return " tokenizer.path=" + published::file("gemma", "tokenizer.model");
  if (starts_with(name, "llama4/")) return " tokenizer.path=" + published::file("llama4", "tokenizer.model");
  if (starts_with(name, "mistral/")) return " tokenizer.path=" + published::file("mistral", "tokenizer.model");
  if (starts_with(name, "phi3/")) return " tokenizer.path=" + published::file("phi3_mini", "tokenizer.model");
  if (starts_with(name, "phi4/"))
    return " tokenizer.vocab_path=" + published::file("phi4", "vocab.json") +
           " tokenizer.merges_path=" + published::file("phi4", "merges.txt");
  if (starts_with(name, "llama2/")) return " tokenizer.path=" + fttest::tokenizers_dir() + "/llama2/tokenizer.json";
  return " tokenizer.path=" + fttest::tokenizers_dir() + "/llama3/tokenizer.json";
}

bool yaml_contains(const std::string& name, const std::string& text) {
  return fttest::read_file(kConfigs + "/" + name + ".yaml").find(text) != std::string::npos;
}

// Whether torchtune's config has a validation dataset (the Qwen 3 ones have none).
bool has_dataset_val(const std::string& name) { return yaml_contains(name, "\ndataset_val:"); }

// Points every path of a ported config at the fixtures: tokenizer files of its family, the
// Alpaca sample as both the training and the validation data, and `checkpoint_dir`.
std::string path_overrides(const std::string& name, const std::string& checkpoint_dir) {
  const std::string alpaca = fttest::data_dir() + "/alpaca_tiny.json";
  return tokenizer_overrides(name) + " dataset.source=" + alpaca +
         (has_dataset_val(name) ? " dataset_val.source=" + alpaca : "") +
         " checkpointer.checkpoint_dir=" + checkpoint_dir;
}

TEST(ShippedConfigs, PortedConfigsValidateWithOnlyTheirPathsPointedAtLocalFiles) {
  for (const auto& name : kPortedConfigs) {
    auto r = fthost("validate --config " + kConfigs + "/" + name + ".yaml" + path_overrides(name, "/tmp/local-model"));
    EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.output;
  }
}

// torchtune's own full_finetune_single_device configs, read from the installed torchtune
// (scripts/setup.sh --with-references), validate with only their paths pointed at local files:
// every component (bitsandbytes' paged 8-bit optimizers among them) and key is accepted with
// torchtune's meaning. The two that cannot: Llama 3 8B's reads Meta's consolidated .pth
// checkpoint, and Code Llama 2 is a family fthost does not ship; each is refused naming why.
TEST(TorchtuneSingleDeviceConfigs, ValidateWithOnlyTheirPathsPointedAtLocalFiles) {
  const auto located = fttest::run_command_stdout(std::string(FT_SOURCE_DIR) +
                                                  "/.venv/bin/python -c 'import importlib.util as u; "
                                                  "print(u.find_spec(\"recipes\").submodule_search_locations[0])' "
                                                  "2>&1");
  ASSERT_EQ(located.exit_code, 0) << "torchtune's recipes are not installed (scripts/setup.sh --with-references): "
                                  << located.output;
  const std::string configs = located.output.substr(0, located.output.find('\n')) + "/configs/";
  const std::vector<std::string> validating = {
      "llama2/7B_full_low_memory",      "llama3_1/8B_full_single_device",  "llama3_2/1B_full_single_device",
      "llama3_2/3B_full_single_device", "mistral/7B_full_low_memory",      "phi3/mini_full_low_memory",
      "phi4/14B_full_low_memory",       "qwen2/0.5B_full_single_device",   "qwen2/1.5B_full_single_device",
      "qwen2/7B_full_single_device",    "qwen2_5/0.5B_full_single_device", "qwen2_5/1.5B_full_single_device",
      "qwen2_5/3B_full_single_device",  "qwen2_5/7B_full_single_device"};
  std::size_t with_bitsandbytes = 0;
  for (const auto& name : validating) {
    const std::string path = configs + name + ".yaml";
    ASSERT_TRUE(fs::exists(path)) << path;
    with_bitsandbytes += fttest::read_file(path).find("bitsandbytes.optim.") != std::string::npos;
    const std::string alpaca = fttest::data_dir() + "/alpaca_tiny.json";
    // The low-memory ones offload activations to pinned host memory, which needs CUDA: they
    // validate on a CUDA build, as shipped; the others also with device = "cpu".
    const bool low_memory = name.find("_low_memory") != std::string::npos;
    auto r = fthost("validate --config " + path + tokenizer_overrides(name) + " dataset.source=" + alpaca +
                    " checkpointer.checkpoint_dir=/tmp/local-model" + (low_memory ? "" : " device=cpu"));
    if (low_memory && !FT_WITH_CUDA) {
      EXPECT_NE(r.exit_code, 0) << name << "\n" << r.output;
      EXPECT_NE(r.output.find("CUDA"), std::string::npos) << name << "\n" << r.output;
      continue;
    }
    EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.output;
    EXPECT_EQ(r.output.find("problem(s) in the configuration"), std::string::npos) << name << "\n" << r.output;
  }
  EXPECT_GE(with_bitsandbytes, 10u);
  auto meta = fthost("validate --config " + configs + "llama3/8B_full_single_device.yaml");
  EXPECT_NE(meta.exit_code, 0);
  EXPECT_NE(
      meta.output.find("checkpointer._component_: unknown component 'torchtune.training.FullModelMetaCheckpointer'"),
      std::string::npos)
      << meta.output;
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

std::string test_name(std::string name) {
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(ShippedConfigs, TorchtuneYamlTrains,
                         ::testing::Values("llama3_2/1B_full", "qwen2_5/0.5B_full"),
                         [](const auto& param_info) { return test_name(param_info.param); });

// A ported YAML file of a newer family and the tiny Hugging Face fixture of that family
// (tests/golden/make_family_goldens.py) it trains. Phi-4 is Phi3ForCausalLM with other sizes, so
// phi4/14B_full trains the Phi-3 fixture under its own model_type, PHI4.
struct FamilyRun {
  std::string config;
  std::string fixture;
};

void PrintTo(const FamilyRun& r, std::ostream* os) { *os << r.config << " on " << r.fixture; }

class TorchtuneFamilyYamlTrains : public ::testing::TestWithParam<FamilyRun> {};

// torchtune's YAML as shipped, with the family's tiny fixture in place of the named model: the
// model built from the fixture's config.json, the checkpointer reading its model.safetensors
// (under the YAML's own model_type), and a few of the fixture's pre-tokenized samples as the
// data, four of them four times over, so that eight steps of the YAML's batch size see each
// sample about four times and the loss must fall. The samples are in the fixture's own 256-token
// vocabulary, which no published tokenizer has, so the tokenizer is left out (the pad id is then
// 0, as the fixture's). Everything else — loss, optimizer, dtype, activation checkpointing,
// batch size, the checkpointer's model_type — is the YAML's.
TEST_P(TorchtuneFamilyYamlTrains, TheFamilysTinyFixtureWithALossThatFalls) {
  const auto& [name, fixture_name] = GetParam();
  const std::string config = kConfigs + "/" + name + ".yaml";
  const std::string fixture = fttest::golden::family_golden_dir() + "/fixtures/" + fixture_name;
  ASSERT_TRUE(fs::exists(fixture + "/model.safetensors")) << fixture << " (the ctest fixture family_goldens makes it)";
  const std::string dir = fttest::temp_dir();

  const auto samples = fttest::golden::read_jsonl(fixture + "/data.jsonl");
  ASSERT_GE(samples.size(), 4u);
  std::string lines;
  for (int repeat = 0; repeat < 4; ++repeat)
    for (std::size_t i = 0; i < 4; ++i) lines += samples[i].dump() + "\n";
  const std::string data_file = dir + "/data.jsonl";
  std::ofstream(data_file) << lines;

  std::string data =
      " dataset._component_=fthost.datasets.tokenized_jsonl '~dataset.packed' dataset.source=" + data_file;
  if (yaml_contains(name, "  split: train[:95%]")) data += " '~dataset.split'";
  if (has_dataset_val(name))
    data +=
        " dataset_val._component_=fthost.datasets.tokenized_jsonl '~dataset_val.split' dataset_val.source=" + data_file;

  auto r = fthost("--config " + config + " output_dir=" + dir + "/run model._component_=fthost.models.from_hf_config" +
                  " model.path=" + fixture + " checkpointer.checkpoint_dir=" + fixture +
                  " 'checkpointer.checkpoint_files=[\"model.safetensors\"]' '~tokenizer'" + data +
                  // A fixed seed: the YAMLs' `seed: null` draws a new shuffle each run, and the
                  // loss of one step depends on which samples it drew.
                  " epochs=1 max_steps_per_epoch=8 gradient_accumulation_steps=1 optimizer.lr=3e-3 seed=0"
                  " metric_logger.output_fmt=jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("weights from the checkpoint"), std::string::npos) << r.output;
  const auto losses = logged_losses(dir + "/run/logs");
  ASSERT_EQ(losses.size(), 8u) << r.output;
  for (double loss : losses) EXPECT_TRUE(std::isfinite(loss)) << r.output;
  // The fixtures' weights are small random numbers: the first loss is near ln(256) (~5.5).
  EXPECT_GT(losses.front(), 4.5) << r.output;
  EXPECT_LT(losses.back(), losses.front() - 0.5) << r.output;
  EXPECT_TRUE(fs::exists(dir + "/run/epoch_0/model.safetensors")) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    ShippedConfigs, TorchtuneFamilyYamlTrains,
    ::testing::Values(FamilyRun{"qwen3/0.6B_full", "qwen3_tied"}, FamilyRun{"gemma/2B_full", "gemma_tied"},
                      FamilyRun{"gemma2/2B_full", "gemma2"}, FamilyRun{"mistral/7B_full", "mistral_sliding"},
                      FamilyRun{"phi3/mini_full", "phi3_untied"}, FamilyRun{"phi4/14B_full", "phi3_untied"}),
    [](const auto& param_info) { return test_name(param_info.param.config); });

}  // namespace
