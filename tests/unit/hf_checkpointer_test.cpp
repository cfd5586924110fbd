// torchtune.training.FullModelHFCheckpointer with the real Llama-family model plugin. The
// independent check is the golden logits: torchtune's own model, with these fixture weights,
// produced `<case>.initial.json`; loading the same files into our model must reproduce them.
#include <ft/checkpoint_files.h>
#include "builtin_plugins.h"
#include "safetensors.h"
#include "test_helpers.h"

#include <ft/checkpointer.h>
#include <ft/model.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include <stdlib.h>

namespace {

namespace fs = std::filesystem;
using ft_checkpointers::SafetensorsFile;
using fttest::TempDir;

std::string fixture(const std::string& name) { return fttest::fixtures_dir() + "/golden/fixtures/" + name; }
std::string golden(const std::string& name) { return fttest::fixtures_dir() + "/golden/" + name; }

std::set<std::string> entries_of(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

class HfCheckpointer : public fttest::BuiltinPluginsTest {
 protected:
  static ft::ConfigNode table(const std::string& name, const std::string& text) { return root(text).table(name); }
  static std::shared_ptr<ft::Model> model_of(const std::string& dir, ft::Model::Args args = {}) {
    return registry().instantiate<ft::Model>(
        table("model", "[model]\n_component_ = \"fthost.models.from_hf_config\"\npath = \"" + dir + "\"\n"), args);
  }
  // A checkpointer table with `keys` (TOML lines) and the given run output_dir.
  static std::shared_ptr<ft::Checkpointer> checkpointer(const std::string& keys, const std::string& output_dir) {
    return registry().instantiate<ft::Checkpointer>(
        table("checkpointer", "[checkpointer]\n_component_ = \"torchtune.training.FullModelHFCheckpointer\"\n" + keys),
        {output_dir});
  }
  static std::shared_ptr<ft::Checkpointer> loading(const std::string& dir, const std::string& model_type,
                                                   const std::string& output_dir) {
    return checkpointer("checkpoint_dir = \"" + dir + "\"\nmodel_type = \"" + model_type + "\"\n", output_dir);
  }
  static std::string config_error(const std::string& keys) {
    return fttest::error_of<ft::ConfigError>([&] { checkpointer(keys, "/tmp/unused"); });
  }
};

at::Tensor logits_of(ft::Model& model, const std::vector<std::int64_t>& tokens) {
  at::NoGradGuard no_grad;
  const at::Tensor input = at::tensor(tokens, at::kLong).unsqueeze(0);
  return at::cat(model.forward(ft::ModelInput{input, {}, {}, {}}).logits, 1);
}

at::Tensor parameter(ft::Model& model, const std::string& name) {
  for (const auto& p : model.hf_parameters())
    if (p.name == name) return p.tensor;
  ADD_FAILURE() << "model has no parameter " << name;
  return {};
}

// Loads the fixture, checks a few parameters against the file itself, then the golden logits.
void expect_golden_initial_logits(const std::shared_ptr<ft::Model>& model,
                                  const std::shared_ptr<ft::Checkpointer>& ckpt, const std::string& fixture_name,
                                  const std::string& golden_case) {
  ASSERT_TRUE(ckpt->load_model(*model));
  SafetensorsFile file(fixture(fixture_name) + "/model.safetensors");
  for (const char* name : {"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
                           "model.layers.1.mlp.down_proj.weight", "model.norm.weight"}) {
    const at::Tensor param = parameter(*model, name);
    EXPECT_EQ(param.scalar_type(), at::kFloat) << name;
    EXPECT_TRUE(at::equal(param, file.tensor(name).to(at::kFloat))) << fixture_name << ": " << name;
  }
  if (file.find("lm_head.weight")) {
    EXPECT_TRUE(at::equal(model->output_weight(), file.tensor("lm_head.weight").to(at::kFloat)));
  } else {
    EXPECT_TRUE(at::equal(model->output_weight(), file.tensor("model.embed_tokens.weight").to(at::kFloat)));
  }

  const auto initial = nlohmann::json::parse(fttest::read_file(golden(golden_case + ".initial.json")));
  const auto tokens = initial["sample0_tokens"].get<std::vector<std::int64_t>>();
  const auto expected = initial["sample0_logits_8x8"].get<std::vector<std::vector<double>>>();
  const at::Tensor logits = logits_of(*model, tokens).to(at::kDouble);
  ASSERT_EQ(logits.size(1), static_cast<std::int64_t>(tokens.size()));
  double worst = 0.0;
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t j = 0; j < 8; ++j) {
      const double got = logits[0][i][j].item<double>();
      EXPECT_NEAR(got, expected[i][j], 1e-4) << golden_case << " position " << i << " vocab " << j;
      worst = std::max(worst, std::abs(got - expected[i][j]));
    }
  const double sum = logits.sum().item<double>(), golden_sum = initial["sample0_logits_sum"].get<double>();
  EXPECT_NEAR(sum, golden_sum, 1e-4 * logits.abs().sum().item<double>()) << golden_case;
  std::cout << "[ golden   ] " << golden_case << ": max |logit - golden| over 8x8 = " << worst << ", logits sum " << sum
            << " vs " << golden_sum << "\n";
}

// --- Loading: golden logits -------------------------------------------------------------------

TEST_F(HfCheckpointer, LlamaUntiedReproducesTorchtuneInitialLogits) {
  TempDir out;
  expect_golden_initial_logits(model_of(fixture("llama3_untied")),
                               loading(fixture("llama3_untied"), "LLAMA3", out.str()), "llama3_untied",
                               "llama3_untied_ga2");
}

TEST_F(HfCheckpointer, Llama31TiedReproducesTorchtuneInitialLogits) {
  TempDir out;
  expect_golden_initial_logits(model_of(fixture("llama31_tied")),
                               loading(fixture("llama31_tied"), "LLAMA3_2", out.str()), "llama31_tied",
                               "llama31_tied_clip");
}

TEST_F(HfCheckpointer, Qwen2Bf16FileIntoFp32ModelReproducesTorchtuneInitialLogits) {
  TempDir out;
  expect_golden_initial_logits(model_of(fixture("qwen2_tied_bf16")),
                               loading(fixture("qwen2_tied_bf16"), "QWEN2", out.str()), "qwen2_tied_bf16",
                               "qwen2_tied_ga2_clip");
}

TEST_F(HfCheckpointer, TorchtuneBuilderWithConfigValuesLoadsTheSameWeights) {
  TempDir out;
  // The same architecture through torchtune's llama3 builder instead of config.json.
  auto model = registry().instantiate<ft::Model>(
      table("model",
            "[model]\n_component_ = \"torchtune.models.llama3.llama3\"\nvocab_size = 256\nnum_layers = 2\n"
            "num_heads = 4\nnum_kv_heads = 2\nembed_dim = 64\nintermediate_dim = 128\nmax_seq_len = 256\n"
            "norm_eps = 1e-5\nrope_base = 500000.0\n"));
  expect_golden_initial_logits(model, loading(fixture("llama3_untied"), "LLAMA3", out.str()), "llama3_untied",
                               "llama3_untied_ga2");
}

TEST_F(HfCheckpointer, EmptyCheckpointDirLoadsNothing) {
  TempDir out;
  auto model = model_of(fixture("llama3_untied"));
  const at::Tensor before = parameter(*model, "model.norm.weight").clone();
  EXPECT_FALSE(checkpointer("model_type = \"LLAMA3\"\n", out.str())->load_model(*model));
  EXPECT_TRUE(at::equal(parameter(*model, "model.norm.weight"), before));
}

// --- Saving -----------------------------------------------------------------------------------

// A copy of a fixture directory with the companion files a Hugging Face download has.
std::string hf_style_copy(const TempDir& dir, const std::string& fixture_name) {
  const std::string src = dir.file("src");
  fs::create_directories(src + "/original");  // e.g. Meta's original weights: a directory, never copied
  for (const char* f : {"config.json", "model.safetensors"})
    fs::copy_file(fixture(fixture_name) + "/" + f, src + "/" + f);
  std::ofstream(src + "/tokenizer.json") << "{\"version\": \"1.0\"}\n";
  std::ofstream(src + "/generation_config.json") << "{\"bos_token_id\": 1}\n";
  std::ofstream(src + "/pytorch_model.bin") << "pickle";
  std::ofstream(src + "/original/consolidated.00.pth") << "pickle";
  return src;
}

TEST_F(HfCheckpointer, SaveThenReloadIsExactAndCarriesConfigAndTokenizer) {
  TempDir dir;
  const std::string src = hf_style_copy(dir, "llama3_untied");
  const std::string out = dir.file("out");
  auto model = model_of(src);
  auto ckpt = loading(src, "LLAMA3", out);
  ASSERT_TRUE(ckpt->load_model(*model));
  {
    at::NoGradGuard no_grad;  // a "trained" model differs from the file it was loaded from
    parameter(*model, "model.norm.weight").mul_(1.5);
  }
  const std::string saved = ckpt->save_model(*model, "epoch_0");
  EXPECT_EQ(saved, out + "/epoch_0");
  EXPECT_EQ(entries_of(out), std::set<std::string>{"epoch_0"});  // no partial directory left
  EXPECT_EQ(entries_of(saved),
            (std::set<std::string>{"model.safetensors", "config.json", "tokenizer.json", "generation_config.json"}));
  EXPECT_EQ(fttest::read_file(saved + "/tokenizer.json"), fttest::read_file(src + "/tokenizer.json"));

  SafetensorsFile file(saved + "/model.safetensors");
  EXPECT_EQ(file.metadata().at("format"), "pt");
  const auto params = model->hf_parameters();
  ASSERT_EQ(file.records().size(), params.size());
  for (const auto& p : params) {
    ASSERT_TRUE(file.find(p.name)) << p.name;
    EXPECT_EQ(file.find(p.name)->dtype, at::kFloat) << p.name;
    EXPECT_TRUE(at::equal(file.tensor(p.name), p.tensor)) << p.name;
  }

  auto config = nlohmann::json::parse(fttest::read_file(saved + "/config.json"));
  auto source_config = nlohmann::json::parse(fttest::read_file(src + "/config.json"));
  EXPECT_EQ(config["torch_dtype"], "float32");
  source_config["torch_dtype"] = "float32";
  EXPECT_EQ(config, source_config);  // everything else HF put there is kept

  // The saved directory is itself a checkpoint: a fresh model loaded from it computes the same.
  auto reloaded = model_of(saved, ft::Model::Args{at::kFloat, at::kCPU, 1234});
  ASSERT_TRUE(loading(saved, "LLAMA3", dir.file("out2"))->load_model(*reloaded));
  const std::vector<std::int64_t> tokens = {1, 17, 99, 3, 250};
  EXPECT_TRUE(at::equal(logits_of(*reloaded, tokens), logits_of(*model, tokens)));
}

TEST_F(HfCheckpointer, SavingAnExistingTagReplacesItWhole) {
  TempDir dir;
  const std::string out = dir.file("out");
  fs::create_directories(out + "/epoch_0");
  std::ofstream(out + "/epoch_0/stale.safetensors") << "old";
  std::ofstream(out + "/epoch_0/config.json") << "{}";
  auto model = model_of(fixture("llama31_tied"));
  auto ckpt = loading(fixture("llama31_tied"), "LLAMA3_2", out);
  ASSERT_TRUE(ckpt->load_model(*model));
  ckpt->save_model(*model, "epoch_0");
  EXPECT_EQ(entries_of(out), std::set<std::string>{"epoch_0"});
  // data.jsonl is not a weight file, so it travels like a tokenizer file would.
  EXPECT_EQ(entries_of(out + "/epoch_0"), (std::set<std::string>{"model.safetensors", "config.json", "data.jsonl"}));
  SafetensorsFile file(out + "/epoch_0/model.safetensors");
  EXPECT_FALSE(file.find("lm_head.weight"));  // tied: saved once, as the embedding
  EXPECT_TRUE(at::equal(file.tensor("model.embed_tokens.weight"), model->output_weight()));
  // Saving again (as every epoch does) replaces the checkpoint saved above.
  ckpt->save_model(*model, "epoch_0");
  EXPECT_EQ(entries_of(out), std::set<std::string>{"epoch_0"});
}

// A tied checkpoint that also stores lm_head.weight (as torchtune's Qwen 3 conversion writes it)
// is saved with the same key set: the copy is written again, equal to the saved embedding.
TEST_F(HfCheckpointer, TiedCheckpointWithLmHeadKeepsItsKeySet) {
  TempDir dir;
  const std::string src = dir.file("src");
  fs::create_directories(src);
  fs::copy_file(fixture("qwen2_tied_bf16") + "/config.json", src + "/config.json");
  SafetensorsFile file(fixture("qwen2_tied_bf16") + "/model.safetensors");
  std::vector<ft::NamedTensor> tensors;
  std::set<std::string> loaded_names;
  for (const auto& r : file.records()) {
    tensors.push_back({r.name, file.tensor(r)});
    loaded_names.insert(r.name);
  }
  ASSERT_FALSE(loaded_names.count("lm_head.weight"));
  tensors.push_back({"lm_head.weight", file.tensor("model.embed_tokens.weight").clone()});
  loaded_names.insert("lm_head.weight");
  ft_checkpointers::write_safetensors(src + "/model.safetensors", tensors);

  auto model = model_of(src);
  auto ckpt = loading(src, "QWEN2", dir.file("out"));
  ASSERT_TRUE(ckpt->load_model(*model));
  const std::string saved_dir = ckpt->save_model(*model, "epoch_0");
  SafetensorsFile saved(saved_dir + "/model.safetensors");
  std::set<std::string> saved_names;
  for (const auto& r : saved.records()) saved_names.insert(r.name);
  EXPECT_EQ(saved_names, loaded_names);
  EXPECT_TRUE(at::equal(saved.tensor("lm_head.weight"), saved.tensor("model.embed_tokens.weight")));

  // Without the copy in the source, none is written (the existing key set again).
  auto plain = loading(fixture("qwen2_tied_bf16"), "QWEN2", dir.file("out_plain"));
  ASSERT_TRUE(plain->load_model(*model));
  SafetensorsFile plain_saved(plain->save_model(*model, "epoch_0") + "/model.safetensors");
  EXPECT_FALSE(plain_saved.find("lm_head.weight"));
}

TEST_F(HfCheckpointer, ShardedSaveWritesAnIndexTheLoaderFollows) {
  TempDir dir;
  auto model = model_of(fixture("qwen2_tied_bf16"));
  auto ckpt = checkpointer(
      "checkpoint_dir = \"" + fixture("qwen2_tied_bf16") + "\"\nmodel_type = \"QWEN2_5\"\nmax_shard_size = 100000\n",
      dir.str());
  ASSERT_TRUE(ckpt->load_model(*model));
  const std::string saved = ckpt->save_model(*model, "step_10");
  auto index = nlohmann::json::parse(fttest::read_file(saved + "/model.safetensors.index.json"));
  std::uint64_t total = 0;
  for (const auto& p : model->hf_parameters()) {
    total += p.tensor.numel() * 4;
    EXPECT_TRUE(index["weight_map"].contains(p.name)) << p.name;
  }
  EXPECT_EQ(index["metadata"]["total_size"].get<std::uint64_t>(), total);
  EXPECT_GT(entries_of(saved).size(), 3u);  // several shards, the index and config.json
  EXPECT_EQ(nlohmann::json::parse(fttest::read_file(saved + "/config.json"))["torch_dtype"], "float32");

  auto reloaded = model_of(fixture("qwen2_tied_bf16"), ft::Model::Args{at::kFloat, at::kCPU, 99});
  ASSERT_TRUE(loading(saved, "QWEN2", dir.str())->load_model(*reloaded));
  for (const auto& p : model->hf_parameters()) EXPECT_TRUE(at::equal(parameter(*reloaded, p.name), p.tensor)) << p.name;
}

// torchtune's `{filename_format, max_filename}` form of checkpoint_files loads the shards it names.
TEST_F(HfCheckpointer, FilenameFormatNamesTheShards) {
  TempDir dir;
  auto model = model_of(fixture("qwen2_tied_bf16"));
  auto ckpt = checkpointer(
      "checkpoint_dir = \"" + fixture("qwen2_tied_bf16") + "\"\nmodel_type = \"QWEN2_5\"\nmax_shard_size = 100000\n",
      dir.str());
  ASSERT_TRUE(ckpt->load_model(*model));
  const std::string saved = ckpt->save_model(*model, "step_1");
  std::vector<std::string> shards;
  for (const auto& name : entries_of(saved))
    if (name.rfind("model-", 0) == 0) shards.push_back(name);
  ASSERT_GT(shards.size(), 1u);
  // Hugging Face's shard names: model-00001-of-0000N.safetensors.
  const std::string count = shards.front().substr(std::string("model-00001-of-").size(), 5);
  ASSERT_EQ(std::stoul(count), shards.size()) << shards.front();
  EXPECT_EQ(ft::expand_filename_format("model-{}-of-{}.safetensors", count), shards);

  fs::remove(saved + "/model.safetensors.index.json");  // the files come from the format alone
  auto reloaded = model_of(fixture("qwen2_tied_bf16"), ft::Model::Args{at::kFloat, at::kCPU, 99});
  ASSERT_TRUE(
      checkpointer("checkpoint_dir = \"" + saved +
                       "\"\nmodel_type = \"QWEN2\"\n"
                       "checkpoint_files = { filename_format = \"model-{}-of-{}.safetensors\", max_filename = \"" +
                       count + "\" }\n",
                   dir.str())
          ->load_model(*reloaded));
  for (const auto& p : model->hf_parameters()) EXPECT_TRUE(at::equal(parameter(*reloaded, p.name), p.tensor)) << p.name;
}

// The expansion itself, against torchtune's documented example (FormattedCheckpointFiles).
TEST(FormattedCheckpointFiles, ExpandsAsTorchtuneDoes) {
  EXPECT_EQ(ft::expand_filename_format("file_{}_of_{}.safetensors", "00003"),
            (std::vector<std::string>{"file_00001_of_00003.safetensors", "file_00002_of_00003.safetensors",
                                      "file_00003_of_00003.safetensors"}));
  EXPECT_EQ(ft::expand_filename_format("m{1}-{0}{{x}}", "2"), (std::vector<std::string>{"m2-1{x}", "m2-2{x}"}));
  EXPECT_EQ(ft::expand_filename_format("a{}b{}", "12").size(), 12u);
  EXPECT_EQ(ft::expand_filename_format("a{}b{}", "12")[8], "a09b12");
  for (const auto& [format, max] : std::vector<std::pair<std::string, std::string>>{{"one-{}.safetensors", "2"},
                                                                                    {"{}{}{}", "2"},
                                                                                    {"{name}-{}", "2"},
                                                                                    {"{}-{1}", "2"},
                                                                                    {"{}-{", "2"},
                                                                                    {"x}{}{}", "2"},
                                                                                    {"{}-{}", ""},
                                                                                    {"{}-{}", "0"},
                                                                                    {"{}-{}", "4a"}})
    EXPECT_THROW(ft::expand_filename_format(format, max), ft::Error) << format << " " << max;
}

TEST_F(HfCheckpointer, Bf16ModelFromScratchSavesBf16WithTheModelsConfig) {
  TempDir dir;
  auto model = model_of(fixture("qwen2_tied_bf16"), ft::Model::Args{at::kBFloat16, at::kCPU, 5});
  auto ckpt = checkpointer("model_type = \"QWEN2\"\n", dir.str());
  const std::string saved = ckpt->save_model(*model, "epoch_0");
  EXPECT_EQ(entries_of(saved), (std::set<std::string>{"model.safetensors", "config.json"}));
  auto config = nlohmann::json::parse(fttest::read_file(saved + "/config.json"));
  EXPECT_EQ(config["torch_dtype"], "bfloat16");
  EXPECT_EQ(config["model_type"], "qwen2");
  EXPECT_EQ(config["num_hidden_layers"], 2);
  SafetensorsFile file(saved + "/model.safetensors");
  for (const auto& r : file.records()) EXPECT_EQ(r.dtype, at::kBFloat16) << r.name;
  EXPECT_TRUE(at::equal(file.tensor("model.layers.1.self_attn.k_proj.bias"),
                        parameter(*model, "model.layers.1.self_attn.k_proj.bias")));
}

TEST_F(HfCheckpointer, RejectsBadTags) {
  TempDir dir;
  auto model = model_of(fixture("llama3_untied"));
  auto ckpt = checkpointer("model_type = \"LLAMA3\"\n", dir.str());
  for (const char* tag : {"", ".hidden", "a/b"})
    EXPECT_NE(fttest::error_of<ft::Error>([&] { ckpt->save_model(*model, tag); }).find("plain directory name"),
              std::string::npos)
        << tag;
}

// --- Load errors name the tensor; a failed load changes nothing -------------------------------

// The llama3_untied fixture with `edit` applied to its tensor list, written to `dir`/model.safetensors.
std::string edited_checkpoint(const TempDir& dir, const std::function<void(std::vector<ft::NamedTensor>&)>& edit) {
  SafetensorsFile file(fixture("llama3_untied") + "/model.safetensors");
  std::vector<ft::NamedTensor> tensors;
  for (const auto& r : file.records()) tensors.push_back({r.name, file.tensor(r)});
  edit(tensors);
  const std::string ckpt_dir = dir.file("edited");
  fs::create_directories(ckpt_dir);
  ft_checkpointers::write_safetensors(ckpt_dir + "/model.safetensors", tensors);
  return ckpt_dir;
}

TEST_F(HfCheckpointer, MissingTensorsAreListed) {
  TempDir dir;
  const std::string ckpt_dir = edited_checkpoint(dir, [](std::vector<ft::NamedTensor>& t) {
    t.erase(std::remove_if(t.begin(), t.end(),
                           [](const ft::NamedTensor& n) {
                             return n.name == "model.norm.weight" || n.name.rfind("model.layers.1.", 0) == 0;
                           }),
            t.end());
  });
  auto model = model_of(fixture("llama3_untied"));
  const at::Tensor before = parameter(*model, "model.embed_tokens.weight").clone();
  auto msg = fttest::error_of<ft::Error>([&] { loading(ckpt_dir, "LLAMA3", dir.str())->load_model(*model); });
  EXPECT_NE(msg.find("10 model parameter(s) missing from the checkpoint (" + ckpt_dir + "/model.safetensors)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("model.norm.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.layers.1.mlp.down_proj.weight"), std::string::npos) << msg;
  EXPECT_TRUE(at::equal(parameter(*model, "model.embed_tokens.weight"), before));  // nothing copied
}

TEST_F(HfCheckpointer, MoreThanTenMissingAreCountedAndCut) {
  TempDir dir;
  // Keeps lm_head, the embedding and layer 0's input norm: 18 of 21 missing.
  const std::string ckpt_dir = edited_checkpoint(dir, [](std::vector<ft::NamedTensor>& t) { t.resize(3); });
  auto model = model_of(fixture("llama3_untied"));
  auto msg = fttest::error_of<ft::Error>([&] { loading(ckpt_dir, "LLAMA3", dir.str())->load_model(*model); });
  EXPECT_NE(msg.find("18 model parameter(s) missing"), std::string::npos) << msg;
  EXPECT_NE(msg.find(", ..."), std::string::npos) << msg;
}

TEST_F(HfCheckpointer, UnexpectedTensorIsNamed) {
  TempDir dir;
  const std::string ckpt_dir = edited_checkpoint(dir, [](std::vector<ft::NamedTensor>& t) {
    t.push_back({"model.layers.2.self_attn.q_proj.weight", at::zeros({64, 64})});
  });
  auto model = model_of(fixture("llama3_untied"));
  auto msg = fttest::error_of<ft::Error>([&] { loading(ckpt_dir, "LLAMA3", dir.str())->load_model(*model); });
  EXPECT_NE(
      msg.find(ckpt_dir + "/model.safetensors: tensor \"model.layers.2.self_attn.q_proj.weight\": unexpected tensor"),
      std::string::npos)
      << msg;
}

TEST_F(HfCheckpointer, ShapeMismatchNamesFileTensorAndBothShapes) {
  TempDir dir;
  const std::string ckpt_dir = edited_checkpoint(dir, [](std::vector<ft::NamedTensor>& t) {
    for (auto& n : t)
      if (n.name == "model.layers.0.self_attn.k_proj.weight") n.tensor = at::zeros({64, 64});
  });
  auto model = model_of(fixture("llama3_untied"));
  auto msg = fttest::error_of<ft::Error>([&] { loading(ckpt_dir, "LLAMA3", dir.str())->load_model(*model); });
  EXPECT_NE(msg.find(ckpt_dir + "/model.safetensors: tensor \"model.layers.0.self_attn.k_proj.weight\": shape [64, 64] "
                                "in the checkpoint but [32, 64] in the model"),
            std::string::npos)
      << msg;
}

TEST_F(HfCheckpointer, TiedModelIgnoresACheckpointsLmHeadCopy) {
  TempDir dir;
  const std::string ckpt_dir = dir.file("tied");
  fs::create_directories(ckpt_dir);
  SafetensorsFile file(fixture("llama31_tied") + "/model.safetensors");
  std::vector<ft::NamedTensor> tensors;
  for (const auto& r : file.records()) tensors.push_back({r.name, file.tensor(r)});
  tensors.push_back({"lm_head.weight", file.tensor("model.embed_tokens.weight")});
  tensors.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", at::ones({8})});
  ft_checkpointers::write_safetensors(ckpt_dir + "/model.safetensors", tensors);
  auto model = model_of(fixture("llama31_tied"));
  EXPECT_TRUE(loading(ckpt_dir, "LLAMA3_2", dir.str())->load_model(*model));
  EXPECT_TRUE(at::equal(model->output_weight(), file.tensor("model.embed_tokens.weight")));
}

// --- Configuration errors ---------------------------------------------------------------------

TEST_F(HfCheckpointer, ConfigErrorsSayWhatIsWrong) {
  const std::string dir = "checkpoint_dir = \"" + fixture("llama3_untied") + "\"\n";
  auto type = config_error(dir + "model_type = \"GPT2\"\n");
  // The names the loaded families register (plugins/models/*), sorted.
  EXPECT_NE(
      type.find(
          "checkpointer.model_type: \"GPT2\" names no model family of the loaded plugins; one of GEMMA, "
          "GEMMA2, LLAMA2, LLAMA3, LLAMA3_2, LLAMA3_VISION, LLAMA4, MISTRAL, MIXTRAL, PHI3_MINI, PHI4, QWEN2, QWEN2_5, "
          "QWEN3, QWEN3_MOE"),
      std::string::npos)
      << type;
  EXPECT_NE(config_error("model_type = \"LLAMA3\"\nsafe_serialization = false\n")
                .find("only safetensors checkpoints are written"),
            std::string::npos);
  auto table_form = config_error(
      dir +
      "model_type = \"LLAMA3\"\n"
      "checkpoint_files = { filename_format = \"model-{}-of-{}.safetensors\", max_filename = \"00002\" }\n");
  // torchtune's table form names the files it expands to; this directory holds model.safetensors only.
  EXPECT_NE(table_form.find("model-00001-of-00002.safetensors: checkpoint file does not exist"), std::string::npos)
      << table_form;
  auto unquoted =
      config_error(dir +
                   "model_type = \"LLAMA3\"\n"
                   "checkpoint_files = { filename_format = \"model-{}-of-{}.safetensors\", max_filename = 2 }\n");
  EXPECT_NE(unquoted.find("checkpointer.checkpoint_files.max_filename: expected a string such as \"00004\""),
            std::string::npos)
      << unquoted;
  auto one_placeholder = config_error(dir +
                                      "model_type = \"LLAMA3\"\n"
                                      "checkpoint_files = { filename_format = \"model-{}.safetensors\", max_filename = "
                                      "\"2\" }\n");
  EXPECT_NE(
      one_placeholder.find("checkpointer.checkpoint_files.filename_format: filename_format \"model-{}.safetensors\": "
                           "expected exactly two {} placeholders"),
      std::string::npos)
      << one_placeholder;
  auto absent =
      config_error(dir + "model_type = \"LLAMA3\"\ncheckpoint_files = [\"model-00001-of-00002.safetensors\"]\n");
  EXPECT_NE(absent.find(fixture("llama3_untied") + "/model-00001-of-00002.safetensors: checkpoint file does not exist"),
            std::string::npos)
      << absent;
  EXPECT_NE(absent.find("holds: model.safetensors"), std::string::npos) << absent;
  auto no_dir = config_error("model_type = \"LLAMA3\"\ncheckpoint_dir = \"/nonexistent/model\"\n");
  EXPECT_NE(no_dir.find("/nonexistent/model: checkpoint directory does not exist"), std::string::npos) << no_dir;
  auto no_output = fttest::error_of<ft::ConfigError>([&] { checkpointer("model_type = \"LLAMA3\"\n", ""); });
  EXPECT_NE(no_output.find("checkpointer.output_dir: no output directory"), std::string::npos) << no_output;
  // recipe_checkpoint: torchtune reads it only to resume, so a run that does not resume accepts it...
  EXPECT_NO_THROW(checkpointer("model_type = \"LLAMA3\"\nrecipe_checkpoint = \"recipe_state.pt\"\n", "/tmp/unused"));
  // ...and a resume, which would need torchtune's recipe_state.pt, refuses it.
  auto recipe_state =
      config_error("model_type = \"LLAMA3\"\nrecipe_checkpoint = \"recipe_state.pt\"\nresume_from_checkpoint = true\n");
  EXPECT_NE(recipe_state.find("checkpointer.recipe_checkpoint: torchtune's recipe_state.pt cannot be read"),
            std::string::npos)
      << recipe_state;
}

}  // namespace
