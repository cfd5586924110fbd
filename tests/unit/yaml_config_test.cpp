// torchtune's YAML configs: OmegaConf's meaning of nulls, numbers and `${...}`, torchtune's
// command-line overrides on them, and errors that name the file, line and key.
#include "config/yaml_config.h"
#include "cli/config_commands.h"
#include "config/config_loader.h"
#include "config/omegaconf_scalars.h"
#include "test_helpers.h"

#include "ft_host/schema_check.h"

#include <ft/errors.h>

#include <cmath>

using fttest::error_of;
using fttest::write_temp;

namespace {

ft::ConfigNode load_yaml(const std::string& text, std::vector<std::string> overrides = {}) {
  return ft::detail::root_node(fthost::load_config(write_temp("run.yaml", text), overrides));
}

// Temp file paths vary; compare from the file name on.
std::string from_file_name(const std::string& msg) {
  auto pos = msg.find("run.yaml");
  return pos == std::string::npos ? msg : msg.substr(pos);
}

// OmegaConf's null is a key left out: torchtune's `cfg.get("seed", None)` cannot tell them apart.
TEST(YamlConfig, NullLeavesTheKeyOut) {
  auto root = load_yaml(
      "seed: null\nmax_steps_per_epoch: ~\nclip_grad_norm:\nbatch_size: 2\n"
      "optimizer:\n  lr: 1\n  fused: NULL\nname: 'null'\n");
  EXPECT_FALSE(root.has("seed"));
  EXPECT_FALSE(root.has("max_steps_per_epoch"));
  EXPECT_FALSE(root.has("clip_grad_norm"));
  EXPECT_FALSE(root.table("optimizer").has("fused"));
  EXPECT_EQ(root.get<int64_t>("batch_size"), 2);
  EXPECT_EQ(root.get<std::string>("name"), "null");  // quoted: a string
}

// PyYAML's YAML 1.1 reads `2e-5` as a string (its float needs a '.' and a signed exponent);
// OmegaConf adds a float pattern so these are numbers. Integers stay integers.
TEST(YamlConfig, NumbersAsOmegaConfReadsThem) {
  auto root = load_yaml(
      "lr: 2e-5\nb: 1e-5\nc: .5\nd: 5e-05\ne: 1.0e-4\nf: 3.\ng: 1e5\n"
      "batch_size: 4\nh: -7\ni: 1_000\nj: 0x1F\nk: 010\nl: 0b101\n"
      "quoted: '2e-5'\nnot_octal: 09\ninf: .inf\n");
  for (const char* key : {"lr", "b", "c", "d", "e", "f", "g"}) EXPECT_TRUE(root.get_optional<double>(key)) << key;
  EXPECT_EQ(root.get<double>("lr"), 2e-5);
  EXPECT_EQ(root.get<double>("b"), 1e-5);
  EXPECT_EQ(root.get<double>("c"), 0.5);
  EXPECT_EQ(root.get<double>("d"), 5e-5);
  EXPECT_EQ(root.get<double>("e"), 1e-4);
  EXPECT_EQ(root.get<double>("f"), 3.0);
  EXPECT_EQ(root.get<double>("g"), 1e5);
  // A float is not an integer: `1e5` is a float to OmegaConf, so an integer key refuses it.
  EXPECT_NE(error_of<ft::ConfigError>([&] { root.get<int64_t>("g"); }).find("expected an integer"), std::string::npos);
  EXPECT_EQ(root.get<int64_t>("batch_size"), 4);
  EXPECT_EQ(root.get<int64_t>("h"), -7);
  EXPECT_EQ(root.get<int64_t>("i"), 1000);
  EXPECT_EQ(root.get<int64_t>("j"), 31);
  EXPECT_EQ(root.get<int64_t>("k"), 8);  // YAML 1.1 octal
  EXPECT_EQ(root.get<int64_t>("l"), 5);
  EXPECT_EQ(root.get<std::string>("quoted"), "2e-5");
  EXPECT_EQ(root.get<std::string>("not_octal"), "09");
  EXPECT_TRUE(std::isinf(root.get<double>("inf")));
}

TEST(YamlConfig, BooleansStringsAndTags) {
  auto root = load_yaml(
      "a: True\nb: false\nc: yes\nd: Off\ne: bf16\nf: \"true\"\ng: !!str 5\nh: !!float 2\ni: |\n  two\n  lines\n");
  EXPECT_TRUE(root.get<bool>("a"));
  EXPECT_FALSE(root.get<bool>("b"));
  EXPECT_TRUE(root.get<bool>("c"));
  EXPECT_FALSE(root.get<bool>("d"));
  EXPECT_EQ(root.get<std::string>("e"), "bf16");
  EXPECT_EQ(root.get<std::string>("f"), "true");
  EXPECT_EQ(root.get<std::string>("g"), "5");
  EXPECT_EQ(root.get<double>("h"), 2.0);
  EXPECT_EQ(root.get<std::string>("i"), "two\nlines\n");
}

TEST(YamlConfig, ListsAndNestedMaps) {
  auto root = load_yaml(
      "dataset:\n  - _component_: a.b\n    source: x.json\n  - {_component_: c.d, split: 'train[:95%]'}\n"
      "model:\n  _component_: m\n  inner:\n    depth: 2\n"
      "tags: [one, two]\nbetas: [0.9, 0.95]\n");
  ASSERT_TRUE(root.is_table_list("dataset"));
  auto datasets = root.table_list("dataset");
  ASSERT_EQ(datasets.size(), 2u);
  EXPECT_EQ(datasets[1].component(), "c.d");
  EXPECT_EQ(datasets[1].get<std::string>("split"), "train[:95%]");
  EXPECT_EQ(root.table("model").table("inner").get<int64_t>("depth"), 2);
  EXPECT_EQ(root.get<std::vector<std::string>>("tags"), (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(root.get<std::vector<double>>("betas"), (std::vector<double>{0.9, 0.95}));
}

// torchtune's configs write `${output_dir}` inside paths and `batch_size_val: ${batch_size}`;
// interpolation runs after the overrides, as OmegaConf resolves lazily.
TEST(YamlConfig, InterpolationAfterOverrides) {
  const std::string text =
      "output_dir: /tmp/run\nbatch_size: 4\nbatch_size_val: ${batch_size}\n"
      "checkpointer:\n  output_dir: ${output_dir}\nmetric_logger:\n  log_dir: ${output_dir}/logs\n";
  auto root = load_yaml(text);
  EXPECT_EQ(root.get<int64_t>("batch_size_val"), 4);  // the referenced value with its type
  EXPECT_EQ(root.table("checkpointer").get<std::string>("output_dir"), "/tmp/run");
  EXPECT_EQ(root.table("metric_logger").get<std::string>("log_dir"), "/tmp/run/logs");
  auto overridden = load_yaml(text, {"batch_size=8", "output_dir=/data/out"});
  EXPECT_EQ(overridden.get<int64_t>("batch_size_val"), 8);
  EXPECT_EQ(overridden.table("metric_logger").get<std::string>("log_dir"), "/data/out/logs");
}

// OmegaConf's `oc.env` resolver in a YAML file, as `output_dir: ${oc.env:HOME}/run` is written.
TEST(YamlConfig, EnvironmentInterpolation) {
  ::setenv("FTHOST_TEST_YAML_HOME", "/home/me", 1);
  ::unsetenv("FTHOST_TEST_YAML_UNSET");
  auto root = load_yaml(
      "output_dir: ${oc.env:FTHOST_TEST_YAML_HOME}/run\n"
      "checkpointer:\n  dir: ${oc.env:FTHOST_TEST_YAML_UNSET,/ckpt}\n");
  EXPECT_EQ(root.get<std::string>("output_dir"), "/home/me/run");
  EXPECT_EQ(root.table("checkpointer").get<std::string>("dir"), "/ckpt");
  auto msg = from_file_name(
      error_of<ft::ConfigError>([&] { load_yaml("seed: 0\nrun:\n  dir: ${oc.env:FTHOST_TEST_YAML_UNSET}\n"); }));
  EXPECT_NE(
      msg.find("run.dir: ${oc.env:FTHOST_TEST_YAML_UNSET}: environment variable 'FTHOST_TEST_YAML_UNSET' is not set"),
      std::string::npos)
      << msg;
  ::unsetenv("FTHOST_TEST_YAML_HOME");
}

// torchtune's overrides (config/_utils.py): `key=value` with the value read as YAML, `None` for
// null, `~key` removes, `model=X` sets model's _component_, max_filename stays a string.
TEST(YamlConfig, TorchtuneOverrides) {
  const std::string text =
      "seed: 3\nshuffle: false\nmodel:\n  _component_: torchtune.models.llama3_2.llama3_2_1b\n"
      "optimizer:\n  lr: 2e-5\nclip_grad_norm: 1.0\n"
      "checkpointer:\n  checkpoint_files:\n    filename_format: model-{}-of-{}.safetensors\n    max_filename: "
      "'00002'\n";
  auto root = load_yaml(
      text, {"seed=None", "shuffle=True", "optimizer.lr=.5", "clip_grad_norm=null",
             "model=torchtune.models.llama3_2.llama3_2_3b", "checkpointer.checkpoint_files.max_filename=00004",
             "~optimizer.lr", "optimizer.lr=5e-05", "max_steps_per_epoch=null"});
  EXPECT_FALSE(root.has("seed"));
  EXPECT_FALSE(root.has("clip_grad_norm"));
  EXPECT_FALSE(root.has("max_steps_per_epoch"));  // null on an absent key: nothing to do
  EXPECT_TRUE(root.get<bool>("shuffle"));
  EXPECT_EQ(root.table("optimizer").get<double>("lr"), 5e-5);
  EXPECT_EQ(root.table("model").component(), "torchtune.models.llama3_2.llama3_2_3b");
  EXPECT_EQ(root.table("checkpointer").table("checkpoint_files").get<std::string>("max_filename"), "00004");
  EXPECT_DOUBLE_EQ(load_yaml(text, {"optimizer.lr=.5"}).table("optimizer").get<double>("lr"), 0.5);
}

TEST(YamlConfig, ErrorsNameFileLineAndKey) {
  // Syntax: line and column.
  auto syntax = from_file_name(
      error_of<ft::ConfigError>([&] { load_yaml("batch_size: 2\noptimizer:\n  lr: [1, 2\nseed: 0\n"); }));
  EXPECT_EQ(syntax.rfind("run.yaml:", 0), 0u) << syntax;
  EXPECT_NE(syntax.find("invalid YAML"), std::string::npos) << syntax;

  // Type: the key's own line.
  auto root = load_yaml("batch_size: 2\n\noptimizer:\n  _component_: torch.optim.AdamW\n  lr: fast\n  lrr: 1\n");
  EXPECT_EQ(from_file_name(error_of<ft::ConfigError>([&] { root.table("optimizer").get<double>("lr"); })),
            "run.yaml:5: optimizer.lr: expected a number, got string \"fast\"");

  // Schema: unknown keys on their line; a missing key on its table's line.
  ft::Schema s;
  s.required("lr", ft::ValueType::Float, "learning rate").required("eps", ft::ValueType::Float, "eps");
  auto problems = ft::detail::check_and_complete(root.table("optimizer"), s);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(from_file_name(problems[0]), "run.yaml:5: optimizer.lr: expected a number, got string \"fast\"");
  EXPECT_EQ(from_file_name(problems[1]), "run.yaml:6: optimizer.lrr: unknown key; did you mean 'lr'?");
  EXPECT_EQ(from_file_name(problems[2]), "run.yaml:3: optimizer.eps: missing required key (float: eps)");

  // An unknown top-level key, on its line.
  auto top = ft::detail::check_and_complete(load_yaml("batch_size: 2\nmixed_precision:\n  enabled: false\n"), [] {
    ft::Schema recipe;
    recipe.optional("batch_size", ft::ValueType::Int, "1", "batch");
    return recipe;
  }());
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(from_file_name(top[0]),
            "run.yaml:2: mixed_precision: unknown top-level key (docs/config.md lists the "
            "recipe's keys)");

  // An override's errors name the command line, not the file.
  auto overridden = load_yaml("optimizer:\n  lr: 1\n", {"optimizer.lr=fast"});
  EXPECT_EQ(error_of<ft::ConfigError>([&] { overridden.table("optimizer").get<double>("lr"); }),
            "command line: optimizer.lr: expected a number, got string \"fast\"");
  // So do a table an override makes and a key it sets beside the file's keys; the file's keys
  // keep their lines.
  auto made =
      load_yaml("batch_size: 2\noptimizer:\n  lr: 1\n", {"mixed_precision.enabled=true", "optimizer.betas=fast"});
  EXPECT_EQ(made.origin("mixed_precision"), "command line");
  EXPECT_EQ(made.table("optimizer").origin("betas"), "command line");
  EXPECT_EQ(from_file_name(made.table("optimizer").origin("lr")), "run.yaml:3");
  EXPECT_EQ(from_file_name(made.origin("batch_size")), "run.yaml:1");

  struct Case {
    std::string text, message;
  };
  const std::vector<Case> cases = {
      {"a: 1\nb: 2\na: 3\n", "run.yaml:3: a: duplicate key (first written on line 1)"},
      {"a:\n  - 1\n  - null\n", "run.yaml:3: a.1: null in a list"},
      {"a:\n  b.c: 1\n", "run.yaml:2: key \"b.c\" in a contains '.'"},
      {"a: !custom 1\n", "run.yaml:1: a: unsupported tag !custom"},
      {"a: !!int x\n", "run.yaml:1: a: \"x\" is not a valid !!int"},
      {"- 1\n- 2\n", "run.yaml:1: the top level must be a mapping"},
      {"a: 1\n---\nb: 2\n", "run.yaml:3: a second YAML document"},
      {"base: &b {x: 1}\nderived:\n  <<: *b\n", "run.yaml:3: derived: YAML merge keys (<<) are not supported"},
      {"a: 99999999999999999999\n", "run.yaml:1: a: integer 99999999999999999999 does not fit in 64 bits"},
      {"m:\n  d: ${nope}/x\n", "run.yaml:2: m.d: ${nope}: no key 'nope' in the config"},
  };
  for (const auto& c : cases) {
    auto msg = from_file_name(error_of<ft::ConfigError>([&] { load_yaml(c.text); }));
    EXPECT_EQ(msg.rfind(c.message, 0), 0u) << c.text << "\n" << msg;
  }
}

// Aliases repeat what they name: six lines can name ten million values.
TEST(YamlConfig, AliasExpansionIsBounded) {
  std::string text = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  const std::string names = "abcdefg";
  for (std::size_t i = 1; i < names.size(); ++i) {
    text += std::string(1, names[i]) + ": &" + names[i] + " [";
    for (int k = 0; k < 10; ++k) text += std::string(k ? ", " : "") + "*" + names[i - 1];
    text += "]\n";
  }
  auto msg = error_of<ft::ConfigError>([&] { load_yaml(text); });
  EXPECT_NE(msg.find("more than 100000 values (through aliases?)"), std::string::npos) << msg;
}

// `fthost cp X.yaml X.toml` writes TOML that loads to the very same values (floats in their
// shortest form must still read back bit for bit).
TEST(YamlConfig, TomlTranslationLoadsTheSameValues) {
  const std::string yaml =
      "output_dir: /tmp/run\nseed: null\nlr: 2e-5\nthird: 0.3333333333333333\ntiny: -2.5e-7\nbig: 1e300\n"
      "f: 3.0\nn: 7\nshuffle: yes\nbetas: [0.9, 0.95]\nmixed: [1, 0.1, 'x, y']\nlog_dir: ${output_dir}/logs\n"
      "dataset:\n  - {_component_: a, split: 'train[:95%]'}\n  - {_component_: b}\n"
      "checkpointer:\n  checkpoint_files: {filename_format: 'model-{}-of-{}.safetensors', max_filename: '00004'}\n";
  const std::string yaml_path = write_temp("run.yaml", yaml);
  const std::string toml_text = fthost::toml_translation_of_yaml(yaml_path);
  EXPECT_NE(toml_text.find("lr = 2e-05\n"), std::string::npos) << toml_text;
  auto from_yaml = fthost::load_config_file(yaml_path);
  auto from_toml = fthost::load_config_text(toml_text, "run.toml");
  EXPECT_TRUE(from_yaml->root() == from_toml->root()) << toml_text;
  EXPECT_FALSE(from_toml->root().contains("seed"));
  EXPECT_EQ(*from_toml->find("lr")->value<double>(), 2e-5);
  EXPECT_EQ(*from_toml->find("third")->value<double>(), 0.3333333333333333);
}

// The scalar rules on their own, against PyYAML's and OmegaConf's documented patterns.
TEST(OmegaConfScalars, ResolvesAsPyYamlWithOmegaConfFloats) {
  using T = fthost::PlainScalar::Type;
  struct Case {
    const char* text;
    T type;
  };
  const std::vector<Case> cases = {
      {"", T::Null},       {"~", T::Null},      {"Null", T::Null},  {"nULL", T::String},  {"on", T::Bool},
      {"NO", T::Bool},     {"tRue", T::String}, {"1", T::Int},      {"+1", T::Int},       {"0o7", T::String},
      {"1e3", T::Float},   {"1E+3", T::Float},  {"-.5", T::String}, {".5e-3", T::Float},  {"1.", T::Float},
      {"-.inf", T::Float}, {".NaN", T::Float},  {"1:30", T::Int},   {"1:30.5", T::Float}, {"2024-01-01", T::String},
  };
  for (const auto& c : cases) EXPECT_EQ(fthost::resolve_plain_scalar(c.text).type, c.type) << "'" << c.text << "'";
}

}  // namespace
