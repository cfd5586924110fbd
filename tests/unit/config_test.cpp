// Config loading: typed access, error messages, overrides, removal, interpolation, schemas.
#include "config/config_loader.h"
#include "test_helpers.h"

#include "ft_host/schema_check.h"

#include <ft/errors.h>

using fttest::error_of;
using fttest::write_temp;

namespace {

ft::ConfigNode load(const std::string& text, std::vector<std::string> overrides = {}) {
  auto path = write_temp("run.toml", text);
  return ft::detail::root_node(fthost::load_config(path, overrides));
}

std::string basename_errors(std::string msg) {
  // Paths of temp files vary; compare from the file name on.
  auto pos = msg.find("run.toml");
  return pos == std::string::npos ? msg : msg.substr(pos);
}

TEST(ConfigNode, TypedAccessAndDefaults) {
  auto root = load("batch_size = 8\nname = \"x\"\n[optimizer]\nlr = 1e-4\nbetas = [0.9, 0.95]\nsteps = 3\n");
  EXPECT_EQ(root.get<int64_t>("batch_size"), 8);
  EXPECT_EQ(root.get<std::string>("name"), "x");
  auto opt = root.table("optimizer");
  EXPECT_DOUBLE_EQ(opt.get<double>("lr"), 1e-4);
  EXPECT_DOUBLE_EQ(opt.get<double>("steps"), 3.0);  // an integer is a valid number
  EXPECT_EQ(opt.get<std::vector<double>>("betas"), (std::vector<double>{0.9, 0.95}));
  EXPECT_EQ(opt.get<int64_t>("absent", 7), 7);
  EXPECT_FALSE(opt.get_optional<bool>("absent").has_value());
  EXPECT_EQ(opt.key_path("lr"), "optimizer.lr");
}

TEST(ConfigNode, WrongTypeNamesFileAndDottedPath) {
  auto root = load("[optimizer]\nlr = \"fast\"\n");
  EXPECT_EQ(basename_errors(error_of<ft::ConfigError>([&] { root.table("optimizer").get<double>("lr"); })),
            "run.toml:2: optimizer.lr: expected a number, got string \"fast\"");
  EXPECT_EQ(basename_errors(error_of<ft::ConfigError>([&] { root.table("optimizer").get<int64_t>("steps"); })),
            "run.toml:1: optimizer.steps: missing required key (an integer)");
}

TEST(ConfigLoader, InvalidTomlNamesLineAndColumn) {
  auto path = write_temp("run.toml", "a = 1\nb = [1,\n");
  auto msg = error_of<ft::ConfigError>([&] { fthost::load_config(path, {}); });
  EXPECT_NE(msg.find("run.toml:2:9:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("invalid TOML"), std::string::npos) << msg;
  EXPECT_NE(error_of<ft::ConfigError>([&] { fthost::load_config("/nonexistent/run.toml", {}); }).find("cannot open"),
            std::string::npos);
}

TEST(Overrides, SetParsedAsTomlValues) {
  auto root = load("batch_size = 4\n[optimizer]\nlr = 1e-3\n",
                   {"optimizer.lr=1e-4", "batch_size=8", "dataset.path=\"x.json\"", "output_dir=/tmp/run",
                    "optimizer.betas=[0.8, 0.9]", "compile=true"});
  EXPECT_DOUBLE_EQ(root.table("optimizer").get<double>("lr"), 1e-4);
  EXPECT_EQ(root.get<int64_t>("batch_size"), 8);
  EXPECT_EQ(root.table("dataset").get<std::string>("path"), "x.json");
  EXPECT_EQ(root.get<std::string>("output_dir"), "/tmp/run");
  EXPECT_EQ(root.table("optimizer").get<std::vector<double>>("betas"), (std::vector<double>{0.8, 0.9}));
  EXPECT_TRUE(root.get<bool>("compile"));
  EXPECT_EQ(root.origin("batch_size"), "command line");
  // An overridden value with the wrong type names the command line, not the file.
  auto bad = load("[optimizer]\nlr = 1e-3\n", {"optimizer.lr=fast"});
  EXPECT_EQ(error_of<ft::ConfigError>([&] { bad.table("optimizer").get<double>("lr"); }),
            "command line: optimizer.lr: expected a number, got string \"fast\"");
}

// torchtune's command line reads `key=[a, b]` with OmegaConf: a list of plain scalars, each
// resolved as a lone value would be (PyYAML's safe_load of the same flow sequence agrees).
TEST(Overrides, UnquotedListsAreListsOfPlainScalars) {
  auto root = load("", {"preemption_signals=[SIGTERM, SIGUSR1]", "custom_sharded_layers=[tok_embeddings,output]",
                        "mixed=[1, yes, .5, run]", "none=[]"});
  EXPECT_EQ(root.get<std::vector<std::string>>("preemption_signals"), (std::vector<std::string>{"SIGTERM", "SIGUSR1"}));
  EXPECT_EQ(root.get<std::vector<std::string>>("custom_sharded_layers"),
            (std::vector<std::string>{"tok_embeddings", "output"}));
  const std::string toml = root.to_toml();
  EXPECT_NE(toml.find("mixed = [ 1, true, 0.5, "), std::string::npos) << toml;  // an integer, a boolean, a float
  EXPECT_NE(toml.find("run"), std::string::npos) << toml;
  EXPECT_TRUE(root.get<std::vector<std::string>>("none").empty());
  EXPECT_NE(error_of<ft::ConfigError>([] { load("", {"x=[a, [b]]"}); }).find("command line: x=[a, [b]]: a list on"),
            std::string::npos);
  EXPECT_NE(error_of<ft::ConfigError>([] { load("", {"x=[a,,b]"}); }).find("a list item is empty or null"),
            std::string::npos);
}

TEST(Overrides, RemoveKeysAndTables) {
  auto root = load("a = 1\n[lr_scheduler]\n_component_ = \"x\"\n[optimizer]\nlr = 1\nfused = true\n",
                   {"~lr_scheduler", "~optimizer.fused"});
  EXPECT_FALSE(root.has("lr_scheduler"));
  EXPECT_FALSE(root.table("optimizer").has("fused"));
  EXPECT_TRUE(root.table("optimizer").has("lr"));
  auto msg = error_of<ft::ConfigError>([&] { load("a = 1\n", {"~lr_scheduler"}); });
  EXPECT_NE(msg.find("~lr_scheduler: no key 'lr_scheduler'"), std::string::npos) << msg;
  EXPECT_NE(error_of<ft::ConfigError>([&] { load("a = 1\n", {"noequals"}); }).find("expected key=value or ~key"),
            std::string::npos);
  EXPECT_NE(error_of<ft::ConfigError>([&] { load("a = 1\n", {"a.b=2"}); }).find("'a' is integer 1, not a table"),
            std::string::npos);
}

TEST(Interpolation, SplicesTextAndKeepsTypesOfWholeReferences) {
  auto root = load(
      "output_dir = \"/tmp/out\"\nseed = 42\n"
      "[checkpointer]\ndir = \"${output_dir}/ckpt\"\nseed_copy = \"${seed}\"\nlabel = \"run-${seed}\"\n"
      "files = [\"${output_dir}/a\", \"b\"]\n",
      {"output_dir=/data/run"});
  auto ck = root.table("checkpointer");
  EXPECT_EQ(ck.get<std::string>("dir"), "/data/run/ckpt");  // overrides apply before interpolation
  EXPECT_EQ(ck.get<int64_t>("seed_copy"), 42);
  EXPECT_EQ(ck.get<std::string>("label"), "run-42");
  EXPECT_EQ(ck.get<std::vector<std::string>>("files"), (std::vector<std::string>{"/data/run/a", "b"}));
}

TEST(Interpolation, ChainsCyclesAndMissingKeys) {
  auto root = load("a = \"${b}/x\"\nb = \"${c}\"\nc = \"root\"\n");
  EXPECT_EQ(root.get<std::string>("a"), "root/x");
  auto cycle = error_of<ft::ConfigError>([&] { load("a = \"${b}\"\nb = \"${a}\"\n"); });
  EXPECT_NE(cycle.find("interpolation cycle"), std::string::npos) << cycle;
  auto missing = basename_errors(error_of<ft::ConfigError>([&] { load("[m]\nd = \"${nope}/x\"\n"); }));
  EXPECT_EQ(missing, "run.toml:2: m.d: ${nope}: no key 'nope' in the config");
}

// Interpolation says which keys were referenced, so keys that only serve references (torchtune's
// `name:`) can be told from keys nothing reads; environment variables are not keys.
TEST(Interpolation, ReportsTheKeysItReferenced) {
  ::setenv("FTHOST_TEST_REFERENCED", "x", 1);
  auto doc = fthost::load_config_text(
      "name = \"tiny\"\nunused = 1\noutput_dir = \"/tmp/${name}/${oc.env:FTHOST_TEST_REFERENCED}\"\n"
      "[m]\nsteps = 3\nlist = [\"${m.steps}\", \"b\"]\n",
      "run.toml");
  const std::set<std::string> referenced = fthost::interpolate(*doc);
  EXPECT_EQ(referenced, (std::set<std::string>{"name", "m.steps"}));
  EXPECT_EQ(ft::detail::root_node(doc).get<std::string>("output_dir"), "/tmp/tiny/x");
  ::unsetenv("FTHOST_TEST_REFERENCED");
}

// OmegaConf's `oc.env` resolver: the variable's value as a string, else the default, else an error.
TEST(Interpolation, EnvironmentVariablesWithAndWithoutDefault) {
  ::setenv("FTHOST_TEST_ENV_DIR", "/scratch/me", 1);
  ::unsetenv("FTHOST_TEST_ENV_UNSET");
  auto root = load(
      "output_dir = \"${oc.env:FTHOST_TEST_ENV_DIR}/run\"\nwhole = \"${oc.env:FTHOST_TEST_ENV_DIR}\"\n"
      "fallback = \"${oc.env:FTHOST_TEST_ENV_UNSET,/tmp/default}\"\n"
      "quoted = \"${oc.env:FTHOST_TEST_ENV_UNSET, 'a b'}\"\nset_wins = \"${oc.env:FTHOST_TEST_ENV_DIR,/x}\"\n"
      "number = \"${oc.env:FTHOST_TEST_ENV_UNSET,8}\"\nleft_out = \"${oc.env:FTHOST_TEST_ENV_UNSET,null}\"\n");
  EXPECT_EQ(root.get<std::string>("output_dir"), "/scratch/me/run");
  EXPECT_EQ(root.get<std::string>("whole"), "/scratch/me");
  EXPECT_EQ(root.get<std::string>("fallback"), "/tmp/default");
  EXPECT_EQ(root.get<std::string>("quoted"), "a b");
  EXPECT_EQ(root.get<std::string>("set_wins"), "/scratch/me");
  EXPECT_EQ(root.get<std::string>("number"), "8");  // oc.env returns a string, default included
  EXPECT_FALSE(root.has("left_out"));               // a null default: OmegaConf's None
  auto unset =
      basename_errors(error_of<ft::ConfigError>([&] { load("[m]\nd = \"${oc.env:FTHOST_TEST_ENV_UNSET}/x\"\n"); }));
  EXPECT_EQ(unset,
            "run.toml:2: m.d: ${oc.env:FTHOST_TEST_ENV_UNSET}: environment variable 'FTHOST_TEST_ENV_UNSET' is not set "
            "and no default is given");
  ::unsetenv("FTHOST_TEST_ENV_DIR");
}

TEST(Schema, UnknownKeysSuggestWrongTypesAndMissingRequired) {
  ft::Schema s;
  s.required("lr", ft::ValueType::Float, "learning rate").optional("eps", ft::ValueType::Float, "1e-8", "eps");
  auto root = load("[optimizer]\n_component_ = \"torch.optim.AdamW\"\nlrr = 1\n");
  auto problems = ft::detail::check_and_complete(root.table("optimizer"), s);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(basename_errors(problems[0]), "run.toml:3: optimizer.lrr: unknown key; did you mean 'lr'?");
  EXPECT_EQ(basename_errors(problems[1]), "run.toml:1: optimizer.lr: missing required key (float: learning rate)");

  auto ok = load("[optimizer]\nlr = 2\n");
  EXPECT_TRUE(ft::detail::check_and_complete(ok.table("optimizer"), s).empty());
  EXPECT_DOUBLE_EQ(ok.table("optimizer").get<double>("eps"), 1e-8);  // default filled in

  auto wrong = load("[optimizer]\nlr = true\n");
  auto p = ft::detail::check_and_complete(wrong.table("optimizer"), s);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(basename_errors(p[0]), "run.toml:2: optimizer.lr: expected a number, got boolean true");
}

TEST(Schema, RejectsBadDeclarations) {
  ft::Schema s;
  EXPECT_THROW(s.optional("x", ft::ValueType::Float, "not toml", "h"), ft::Error);
  s.optional("y", ft::ValueType::Int, "1", "h");
  EXPECT_THROW(s.optional("y", ft::ValueType::Int, "1", "h"), ft::Error);
  EXPECT_THROW(s.required("_component_", ft::ValueType::String, "h"), ft::Error);
}

}  // namespace
