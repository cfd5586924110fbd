// torchtune's command-line habits through the fthost binary: YAML configs, `fthost run
// full_finetune_distributed`, `--nproc_per_node`, `fthost cp` and `fthost ls configs`.
#include "config/shipped_configs.h"
#include "test_helpers.h"

#include <ft/errors.h>

#include <boost/filesystem.hpp>

#include <fstream>
#include <map>

namespace {

namespace fs = boost::filesystem;
using Result = fttest::CommandResult;

Result run(const std::string& args) { return fttest::run_fthost(args); }

const std::string kSource = FT_SOURCE_DIR;
const std::string kDemoData = kSource + "/configs/demo/sort_tokens.jsonl";

// configs/tiny_demo.toml written as torchtune writes its configs: OmegaConf's nulls, `3e-3`
// (a string to YAML 1.1, a number to OmegaConf), `${output_dir}`.
std::string demo_yaml(const std::string& output_dir) {
  return "# tiny demo, torchtune style\n"
         "output_dir: " +
         output_dir +
         "\n"
         "seed: 0\nepochs: 1\nmax_steps_per_epoch: null\nbatch_size: 16\ngradient_accumulation_steps: 1\n"
         "clip_grad_norm: null\nshuffle: True\ndtype: fp32\ndevice: cpu\nlog_every_n_steps: 1\nnum_threads: 1\n"
         "model:\n  _component_: torchtune.models.llama3.llama3\n  vocab_size: 64\n  num_layers: 2\n  num_heads: 4\n"
         "  num_kv_heads: 2\n  embed_dim: 64\n  intermediate_dim: 128\n  max_seq_len: 64\n  rope_base: 10000.0\n"
         "checkpointer:\n  _component_: torchtune.training.FullModelHFCheckpointer\n  checkpoint_dir: ''\n"
         "  model_type: LLAMA3\n  output_dir: ${output_dir}\n"
         "dataset:\n  _component_: fthost.datasets.tokenized_jsonl\n  source: " +
         kDemoData +
         "\n"
         "loss:\n  _component_: torchtune.modules.loss.CEWithChunkedOutputLoss\n"
         "optimizer:\n  _component_: torch.optim.AdamW\n  lr: 3e-3\n  weight_decay: 0.01\n"
         "lr_scheduler:\n  _component_: torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup\n"
         "  num_warmup_steps: 2\n"
         "metric_logger:\n  _component_: torchtune.training.metric_logging.DiskLogger\n  log_dir: ${output_dir}/logs\n"
         "  output_fmt: jsonl\n";
}

void write(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// The "loss" values of a DiskLogger jsonl directory, as written.
std::vector<std::string> logged_losses(const std::string& log_dir) {
  std::vector<std::string> losses;
  for (auto& e : fs::directory_iterator(log_dir)) {
    std::ifstream in(e.path().string());
    for (std::string line; std::getline(in, line);) {
      const auto at = line.find("\"loss\": ");
      if (at == std::string::npos) continue;
      losses.push_back(line.substr(at + 8, line.find_first_of(",}", at) - at - 8));
    }
  }
  return losses;
}

// A YAML config and its `fthost cp` TOML translation are the same run, loss for loss.
TEST(TorchtuneCli, YamlAndItsTomlTranslationTrainIdentically) {
  const std::string dir = fttest::temp_dir();
  write(dir + "/demo.yaml", demo_yaml(dir + "/from_yaml"));
  auto cp = run("cp " + dir + "/demo.yaml " + dir + "/demo.toml");
  ASSERT_EQ(cp.exit_code, 0) << cp.output;
  const std::string toml = fttest::read_file(dir + "/demo.toml");
  EXPECT_NE(toml.find("lr = 0.003"), std::string::npos) << toml;            // a number, not the string "3e-3"
  EXPECT_EQ(toml.find("clip_grad_norm"), std::string::npos) << toml;        // null: left out
  EXPECT_NE(toml.find("'${output_dir}/logs'"), std::string::npos) << toml;  // interpolated at load time

  auto from_yaml = run("run full_finetune_distributed --config " + dir + "/demo.yaml max_steps_per_epoch=6");
  ASSERT_EQ(from_yaml.exit_code, 0) << from_yaml.output;
  auto from_toml = run("--config " + dir + "/demo.toml max_steps_per_epoch=6 output_dir=" + dir + "/from_toml");
  ASSERT_EQ(from_toml.exit_code, 0) << from_toml.output;
  const auto yaml_losses = logged_losses(dir + "/from_yaml/logs");
  ASSERT_EQ(yaml_losses.size(), 6u) << from_yaml.output;
  EXPECT_EQ(logged_losses(dir + "/from_toml/logs"), yaml_losses);
  EXPECT_NE(yaml_losses.front(), yaml_losses.back());  // it trained
}

// The error a user sees for a bad YAML value names the file, its line and the key.
TEST(TorchtuneCli, YamlErrorsNameFileLineAndKey) {
  const std::string dir = fttest::temp_dir();
  std::string text = demo_yaml(dir);
  text.replace(text.find("lr: 3e-3"), 8, "lr: fast");
  text.replace(text.find("weight_decay"), 12, "weight_decya");
  write(dir + "/bad.yaml", text);
  const int lr_line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + text.find("lr: fast"), '\n'));
  auto r = run("validate --config " + dir + "/bad.yaml");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(
      r.output.find("bad.yaml:" + std::to_string(lr_line) + ": optimizer.lr: expected a number, got string \"fast\""),
      std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("bad.yaml:" + std::to_string(lr_line + 1) +
                          ": optimizer.weight_decya: unknown key; did you mean 'weight_decay'?"),
            std::string::npos)
      << r.output;
  write(dir + "/broken.yaml", "seed: 0\noptimizer:\n  lr: [1\n");
  auto syntax = run("validate --config " + dir + "/broken.yaml");
  EXPECT_EQ(syntax.exit_code, 2);
  EXPECT_NE(syntax.output.find("broken.yaml:4:1: invalid YAML"), std::string::npos) << syntax.output;
}

TEST(TorchtuneCli, RunTakesTorchtunesRecipeName) {
  const std::string dir = fttest::temp_dir();
  write(dir + "/demo.yaml", demo_yaml(dir + "/out"));
  auto ok = run("run full_finetune_distributed --config " + dir + "/demo.yaml max_steps_per_epoch=1");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  auto bad = run("run lora_finetune_single_device --config " + dir + "/demo.yaml");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("unknown recipe 'lora_finetune_single_device'; fthost runs one recipe: "
                            "full_finetune_distributed"),
            std::string::npos)
      << bad.output;
  auto config_as_recipe = run("run " + dir + "/demo.yaml");
  EXPECT_EQ(config_as_recipe.exit_code, 2);
  EXPECT_NE(config_as_recipe.output.find("a config is given with --config " + dir + "/demo.yaml"), std::string::npos)
      << config_as_recipe.output;
  // `tune validate X` names the config without --config.
  auto validate = run("validate " + dir + "/demo.yaml max_steps_per_epoch=1");
  EXPECT_EQ(validate.exit_code, 0) << validate.output;
  EXPECT_NE(validate.output.find("demo.yaml: OK"), std::string::npos) << validate.output;
  // Without a name, `run` stays what it was.
  EXPECT_EQ(run("run --config " + dir + "/demo.yaml max_steps_per_epoch=1 output_dir=" + dir + "/plain").exit_code, 0);
}

// torchtune spells the launcher option --nproc_per_node; both spellings start the ranks.
TEST(TorchtuneCli, NprocPerNodeInBothSpellings) {
  const std::string dir = fttest::temp_dir();
  write(dir + "/demo.yaml", demo_yaml(dir + "/out"));
  for (const std::string launch : {"run --nproc_per_node 2 full_finetune_distributed", "--nproc_per_node=2 run",
                                   "--nproc-per-node 2 run full_finetune_distributed"}) {
    auto r = run(launch + " --config " + dir + "/demo.yaml max_steps_per_epoch=2 output_dir=" + dir + "/" +
                 std::to_string(launch.size()));
    EXPECT_EQ(r.exit_code, 0) << launch << "\n" << r.output;
    EXPECT_NE(r.output.find("launcher: started 2 ranks"), std::string::npos) << launch << "\n" << r.output;
    EXPECT_NE(r.output.find("x 2 data-parallel ranks"), std::string::npos) << launch << "\n" << r.output;
  }
  auto both = run("--nproc_per_node 2 --nproc-per-node 2 --config " + dir + "/demo.yaml");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.output.find("the same option; give it once"), std::string::npos) << both.output;
  // A wrong recipe name is reported once, before any rank starts.
  auto bad = run("run --nproc_per_node 2 full_finetune_single --config " + dir + "/demo.yaml");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.output.find("launcher: started"), std::string::npos) << bad.output;
}

// How many times `fragment` occurs in `text`.
std::size_t occurrences(const std::string& text, const std::string& fragment) {
  std::size_t count = 0;
  for (auto at = text.find(fragment); at != std::string::npos; at = text.find(fragment, at + fragment.size())) ++count;
  return count;
}

// The launcher checks the config before any rank starts: a mistake is one message with its
// suggestion and exit code 2, not one per rank, and no rank runs.
TEST(TorchtuneCli, LauncherChecksTheConfigOnceBeforeStartingRanks) {
  const std::string dir = fttest::temp_dir();
  auto misspelt = run("run --nproc_per_node 2 full_finetune_distributed --config llama3_2/1B_ful");
  EXPECT_EQ(misspelt.exit_code, 2) << misspelt.output;
  EXPECT_EQ(occurrences(misspelt.output,
                        "'llama3_2/1B_ful' is neither a file nor a shipped config; did you mean "
                        "'llama3_2/1B_full'"),
            1u)
      << misspelt.output;
  EXPECT_EQ(misspelt.output.find("launcher: started"), std::string::npos) << misspelt.output;
  EXPECT_EQ(misspelt.output.find("[rank "), std::string::npos) << misspelt.output;

  // A key the recipe does not know: reported once, on its line.
  std::string text = demo_yaml(dir + "/out");
  text.replace(text.find("epochs: 1"), 9, "epochz: 1");
  write(dir + "/bad.yaml", text);
  const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + text.find("epochz"), '\n'));
  for (const std::string launch : {"--nproc-per-node 2", "run --nproc_per_node 2 full_finetune_distributed"}) {
    auto bad = run(launch + " --config " + dir + "/bad.yaml");
    EXPECT_EQ(bad.exit_code, 2) << bad.output;
    EXPECT_EQ(
        occurrences(bad.output, "bad.yaml:" + std::to_string(line) + ": epochz: unknown key; did you mean 'epochs'?"),
        1u)
        << bad.output;
    EXPECT_EQ(occurrences(bad.output, "problem(s) in the configuration"), 1u) << bad.output;
    EXPECT_EQ(bad.output.find("launcher: started"), std::string::npos) << bad.output;
    EXPECT_FALSE(fs::exists(dir + "/out")) << bad.output;
  }
  // Without a launcher the same check runs in the one process.
  auto single = run("--config " + dir + "/bad.yaml");
  EXPECT_EQ(single.exit_code, 2) << single.output;
  EXPECT_EQ(occurrences(single.output, ": epochz: unknown key; did you mean 'epochs'?"), 1u) << single.output;
}

// A config name that is neither a file nor a shipped config is refused with the names it is
// close to; a missing path with a config extension is a file that cannot be opened.
TEST(TorchtuneCli, UnknownConfigNameSuggestsShippedConfigs) {
  auto near = run("validate --config qwen2_5/0.5B_ful");
  EXPECT_EQ(near.exit_code, 2) << near.output;
  EXPECT_NE(near.output.find("--config: 'qwen2_5/0.5B_ful' is neither a file nor a shipped config; did you mean "
                             "'qwen2_5/0.5B_full'"),
            std::string::npos)
      << near.output;
  auto far = run("validate --config no_such_family/at_all");
  EXPECT_EQ(far.exit_code, 2) << far.output;
  EXPECT_NE(far.output.find("'no_such_family/at_all' is neither a file nor a shipped config (`fthost ls configs`"),
            std::string::npos)
      << far.output;
  const std::string missing = fttest::temp_dir() + "/missing.yaml";
  auto file = run("validate --config " + missing);
  EXPECT_EQ(file.exit_code, 2) << file.output;
  EXPECT_NE(file.output.find(missing + ": cannot open config file"), std::string::npos) << file.output;
}

TEST(TorchtuneCli, LsConfigsListsShippedConfigsByName) {
  auto r = run("ls configs");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\n  llama3_2/1B_full\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\n  tiny_demo\n"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(".toml"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("sort_tokens"), std::string::npos) << "data files are not configs\n" << r.output;
}

TEST(TorchtuneCli, CpCopiesShippedConfigsAndRefusesToOverwrite) {
  const std::string dir = fttest::temp_dir();
  const std::string shipped = kSource + "/configs/llama3_2/1B_full.yaml";
  auto r = run("cp llama3_2/1B_full " + dir + "/mine.yaml");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(fttest::read_file(dir + "/mine.yaml"), fttest::read_file(shipped));

  auto again = run("cp llama3_2/1B_full " + dir + "/mine.yaml");
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.output.find("mine.yaml already exists; pass --force to overwrite it"), std::string::npos)
      << again.output;
  write(dir + "/mine.yaml", "changed");
  EXPECT_EQ(run("cp --force llama3_2/1B_full.yaml " + dir + "/mine.yaml").exit_code, 0);
  EXPECT_EQ(fttest::read_file(dir + "/mine.yaml"), fttest::read_file(shipped));

  // Into a directory: the shipped file's name; a destination without extension takes the source's.
  EXPECT_EQ(run("cp tiny_demo " + dir).exit_code, 0);
  EXPECT_TRUE(fs::exists(dir + "/tiny_demo.toml"));
  EXPECT_EQ(run("cp tiny_demo.toml " + dir + "/noext").exit_code, 0);
  EXPECT_TRUE(fs::exists(dir + "/noext.toml"));

  auto no_parent = run("cp tiny_demo " + dir + "/new/dir/x.toml");
  EXPECT_EQ(no_parent.exit_code, 2);
  EXPECT_NE(no_parent.output.find("does not exist; pass --make-parents"), std::string::npos) << no_parent.output;
  EXPECT_EQ(run("cp --make-parents tiny_demo " + dir + "/new/dir/x.toml").exit_code, 0);
  EXPECT_TRUE(fs::exists(dir + "/new/dir/x.toml"));

  auto unknown = run("cp llama3_2/1B_ful " + dir + "/y.yaml");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find("'llama3_2/1B_ful' is neither a file nor a shipped config; did you mean "
                                "'llama3_2/1B_full'"),
            std::string::npos)
      << unknown.output;
  auto to_yaml = run("cp tiny_demo.toml " + dir + "/z.yaml");
  EXPECT_EQ(to_yaml.exit_code, 2);
  EXPECT_NE(to_yaml.output.find("cp translates YAML to TOML only"), std::string::npos) << to_yaml.output;
  EXPECT_EQ(run("cp tiny_demo " + dir + "/z.txt").exit_code, 2);
  EXPECT_EQ(run("cp tiny_demo").exit_code, 2);
}

// A name must say which file it means: no two shipped configs in one directory share a name
// (`ls configs` lists names without extensions, `cp` and `--config` take them).
TEST(TorchtuneCli, NoTwoShippedConfigsShareAName) {
  std::map<std::string, std::string> seen;
  for (auto& e : fs::recursive_directory_iterator(kSource + "/configs")) {
    const std::string ext = e.path().extension().string();
    if (ext != ".yaml" && ext != ".yml" && ext != ".toml") continue;
    fs::path name = e.path();
    const auto [it, inserted] = seen.emplace(name.replace_extension().string(), e.path().string());
    EXPECT_TRUE(inserted) << it->second << " and " << e.path().string() << " share a name";
  }
  EXPECT_GE(seen.size(), 13u);
}

// A name in two formats is refused with both files named, not resolved to one of them.
TEST(TorchtuneCli, ConfigNameInTwoFormatsIsRefused) {
  const std::string dir = fttest::temp_dir();
  fs::create_directories(dir + "/family");
  write(dir + "/family/both.yaml", "seed: 0\n");
  write(dir + "/family/both.toml", "seed = 0\n");
  write(dir + "/family/one.toml", "seed = 0\n");
  try {
    fthost::find_config_named(dir, "family/both");
    ADD_FAILURE() << "family/both resolved";
  } catch (const ft::Error& e) {
    EXPECT_NE(std::string(e.what()).find("config name 'family/both' is ambiguous: " + dir + "/family/both.yaml and " +
                                         dir + "/family/both.toml share it; give the name with its extension"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(fthost::find_config_named(dir, "family/both.toml"), dir + "/family/both.toml");
  EXPECT_EQ(fthost::find_config_named(dir, "family/one"), dir + "/family/one.toml");
  EXPECT_FALSE(fthost::find_config_named(dir, "family/none").has_value());
}

// `--config NAME` runs a shipped config, as `tune run ... --config llama3_2/1B_full` does.
TEST(TorchtuneCli, ConfigTakesAShippedConfigsName) {
  auto r = run("validate --config tiny_demo dataset.source=" + kDemoData);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// torchtune's configs name Hub datasets; fthost reads them from the local Hugging Face cache, and
// for one not there says where it looked and how to download it.
TEST(TorchtuneCli, HubDatasetNameSaysToDownloadItFirst) {
  const std::string dir = fttest::temp_dir();
  write(dir + "/alpaca.yaml",
        "output_dir: " + dir +
            "\nseed: 0\nbatch_size: 2\nepochs: 1\n"
            "model:\n  _component_: torchtune.models.llama3.llama3\n  vocab_size: 128256\n  num_layers: 1\n"
            "  num_heads: 2\n  num_kv_heads: 1\n  embed_dim: 16\n  intermediate_dim: 32\n  max_seq_len: 64\n"
            "tokenizer:\n  _component_: torchtune.models.llama3.llama3_tokenizer\n  path: " +
            fttest::fixtures_dir() +
            "/tokenizers/llama3/tokenizer.json\n  max_seq_len: 64\n"
            "dataset:\n  _component_: torchtune.datasets.alpaca_dataset\n  source: tatsu-lab/alpaca\n"
            "checkpointer:\n  _component_: torchtune.training.FullModelHFCheckpointer\n  checkpoint_dir: ''\n"
            "  model_type: LLAMA3\n"
            "loss:\n  _component_: torchtune.modules.loss.CEWithChunkedOutputLoss\n"
            "optimizer:\n  _component_: torch.optim.AdamW\n  lr: 2e-5\n"
            "metric_logger:\n  _component_: torchtune.training.metric_logging.StdoutLogger\n");
  auto r = fttest::run_shell("HF_HUB_CACHE=" + dir + "/hub " + std::string(FTHOST_BINARY) +
                             " run full_finetune_distributed --config " + dir + "/alpaca.yaml");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  for (const std::string& expected : std::vector<std::string>{
           "source = \"tatsu-lab/alpaca\": this Hugging Face Hub dataset is not in the local cache (looked for " + dir +
               "/hub/datasets--tatsu-lab--alpaca; the cache is HF_HUB_CACHE)",
           "hf download tatsu-lab/alpaca --repo-type dataset"})
    EXPECT_NE(r.output.find(expected), std::string::npos) << expected << "\n" << r.output;
}

TEST(TorchtuneCli, HelpShowsTheTorchtuneSpellings) {
  auto h = run("--help");
  EXPECT_EQ(h.exit_code, 0);
  for (const char* text : {"fthost ls configs", "fthost cp CONFIG DEST",
                           "--nproc_per_node N] full_finetune_distributed", "torchtune's YAML"})
    EXPECT_NE(h.output.find(text), std::string::npos) << text << "\n" << h.output;
}

}  // namespace
