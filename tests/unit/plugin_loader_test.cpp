// Plugin loading: every loader error is specific, kinds are checked, objects keep libraries alive.
#include "plugin_host/plugin_loader.h"
#include <ft/registry.h>
#include "config/config_loader.h"
#include "test_helpers.h"

#include <ft/errors.h>
#include <ft/metric_logger.h>

using fttest::error_of;

namespace {

std::string case_dir(const std::string& name) { return std::string(FT_TEST_PLUGIN_ROOT) + "/" + name; }
std::string case_lib(const std::string& name) { return case_dir(name) + "/libtest_" + name + ".so"; }

std::string load_error(const std::vector<fthost::PluginSearchPath>& paths) {
  return error_of<ft::PluginError>([&] {
    fthost::PluginLoader loader;
    loader.load_all(paths);
  });
}

TEST(PluginLoader, LoadsBuiltinPlugins) {
  fthost::PluginLoader loader;
  loader.load_all({{FT_BUILTIN_PLUGIN_DIR, "test"}});
  EXPECT_GE(loader.plugins().size(), 4u);
  const auto* adamw = loader.registry().find("torch.optim.AdamW");
  ASSERT_NE(adamw, nullptr);
  EXPECT_EQ(adamw->kind, ft::Kind::Optimizer);
  EXPECT_NE(adamw->library.find("libft_optim.so"), std::string::npos);
  EXPECT_NE(adamw->schema.find("lr"), nullptr);
}

TEST(PluginLoader, CannotOpenNamesPathAndSystemMessage) {
  auto bogus = fttest::write_temp("libbogus.so",
                                  "\x7f"
                                  "ELF garbage");
  auto msg = load_error({{bogus, "--plugin-dir"}});
  EXPECT_NE(msg.find(bogus), std::string::npos) << msg;
  EXPECT_NE(msg.find("not an fthost plugin: not an ELF shared library"), std::string::npos) << msg;
  auto missing = load_error({{"/nonexistent/plugins", "--plugin-dir"}});
  EXPECT_EQ(missing, "--plugin-dir: /nonexistent/plugins: no such file or directory");
}

TEST(PluginLoader, NoEntryPointIsNotAPlugin) {
  auto msg = load_error({{case_lib("no_entry"), "--plugin-dir"}});
  EXPECT_NE(msg.find("libtest_no_entry.so: not an fthost plugin: no 'fthost_plugin_v1' entry point"), std::string::npos)
      << msg;
  // Found by scanning a directory, it is skipped with a warning instead.
  fthost::PluginLoader loader;
  loader.load_all({{case_dir("no_entry"), "--plugin-dir"}});
  ASSERT_EQ(loader.warnings().size(), 1u);
  EXPECT_EQ(loader.plugins().size(), 0u);
}

TEST(PluginLoader, AbiMismatchPrintsBothSides) {
  auto msg = load_error({{case_dir("wrong_abi"), "--plugin-dir"}});
  EXPECT_NE(
      msg.find("plugin libtest_wrong_abi.so was built for fthost plugin ABI 13.0, this host has ABI 12.1: rebuild it "
               "against this SDK"),
      std::string::npos)
      << msg;
}

TEST(PluginLoader, FingerprintMismatchPrintsBothSides) {
  auto msg = load_error({{case_dir("wrong_fingerprint"), "--plugin-dir"}});
  const std::string host = fthost::describe_fingerprint(ft::this_build_fingerprint());
  EXPECT_NE(msg.find("was built for LibTorch 2.5.1 (cuda, C++11 ABI 1, gcc 13), this host has " + host),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("rebuild it against this SDK"), std::string::npos);
}

TEST(PluginLoader, RegistrationFailureCarriesPluginMessage) {
  auto msg = load_error({{case_dir("throwing_registration"), "--plugin-dir"}});
  EXPECT_NE(msg.find("libtest_throwing_registration.so: registration failed: acme license file not found"),
            std::string::npos)
      << msg;
}

TEST(PluginLoader, DuplicateNameNamesBothLibraries) {
  auto msg = load_error({{FT_BUILTIN_PLUGIN_DIR, "default"}, {case_dir("duplicate_adamw"), "--plugin-dir"}});
  EXPECT_NE(msg.find("component 'torch.optim.AdamW' is registered by two libraries"), std::string::npos) << msg;
  EXPECT_NE(msg.find("libft_optim.so"), std::string::npos) << msg;
  EXPECT_NE(msg.find("libtest_duplicate_adamw.so"), std::string::npos) << msg;
}

class Instantiate : public ::testing::Test {
 protected:
  void SetUp() override {
    loader_.load_all({{FT_BUILTIN_PLUGIN_DIR, "default"}, {case_dir("counting_logger"), "--plugin-dir"}});
  }
  ft::ConfigNode table(const std::string& text, const std::string& key) {
    auto path = fttest::write_temp("run.toml", text);
    return ft::detail::root_node(fthost::load_config(path, {})).table(key);
  }
  fthost::PluginLoader loader_;
};

TEST_F(Instantiate, KindMismatch) {
  auto t = table("[loss]\n_component_ = \"torch.optim.AdamW\"\n", "loss");
  auto msg = error_of<ft::ConfigError>([&] { loader_.registry().resolve(t, ft::Kind::Loss); });
  EXPECT_NE(msg.find("loss: 'torch.optim.AdamW' is an optimizer, not a loss"), std::string::npos) << msg;
}

TEST_F(Instantiate, UnknownComponentSuggestsAndNamesSearchedDirectories) {
  auto t = table("[optimizer]\n_component_ = \"torch.optim.AdamX\"\n", "optimizer");
  auto msg = error_of<ft::ConfigError>([&] { loader_.registry().resolve(t, ft::Kind::Optimizer); });
  EXPECT_NE(msg.find("optimizer._component_: unknown component 'torch.optim.AdamX'; did you mean 'torch.optim.Adam', "
                     "'torch.optim.AdamW'?"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find(FT_BUILTIN_PLUGIN_DIR), std::string::npos) << msg;
}

TEST_F(Instantiate, FactoryExceptionBecomesConfigErrorWithPath) {
  auto t = table("[metric_logger]\n_component_ = \"acme.test.ExplodingLogger\"\n", "metric_logger");
  auto msg = error_of<ft::ConfigError>([&] { loader_.registry().instantiate<ft::MetricLogger>(t); });
  EXPECT_NE(msg.find("metric_logger: acme.test.ExplodingLogger"), std::string::npos) << msg;
  EXPECT_NE(msg.find("failed: disk on fire"), std::string::npos) << msg;
}

TEST(PluginLifetime, ObjectsKeepTheirLibraryLoaded) {
  std::shared_ptr<ft::MetricLogger> logger;
  {
    fthost::PluginLoader loader;
    loader.load_all({{case_dir("counting_logger"), "--plugin-dir"}});
    auto path = fttest::write_temp("run.toml", "[metric_logger]\n_component_ = \"acme.test.CountingLogger\"\n");
    logger = loader.registry().instantiate<ft::MetricLogger>(
        ft::detail::root_node(fthost::load_config(path, {})).table("metric_logger"));
  }
  // The loader and registry are gone; the library must still be mapped and the object usable.
  EXPECT_NE(fttest::read_file("/proc/self/maps").find("libtest_counting_logger.so"), std::string::npos);
  logger->log("loss", 1.0, 1);
  logger->log_dict({{"a", 1.0}, {"b", 2.0}}, 2);
  logger.reset();
  EXPECT_EQ(fttest::read_file("/proc/self/maps").find("libtest_counting_logger.so"), std::string::npos)
      << "library should unload with its last object";
}

}  // namespace

namespace {

ft::ModelFamily family(const std::string& name, std::vector<std::string> hf_types, std::vector<std::string> ckpt) {
  ft::ModelFamily f;
  f.name = name;
  f.hf_model_types = std::move(hf_types);
  f.checkpointer_model_types = std::move(ckpt);
  return f;
}

}  // namespace

// Model families: looked up by config.json model_type and checkpointer model_type; two libraries
// claiming one name are refused, naming both.
TEST(PluginLoader, ModelFamiliesAreLookedUpAndClaimedOnce) {
  ft::Registry host;
  ft::Registry first;
  first.add_family(family("acme", {"acme_lm"}, {"ACME", "ACME_2"}));
  host.merge(std::move(first), "libacme.so", nullptr);
  ASSERT_NE(host.family_reading("acme_lm"), nullptr);
  EXPECT_EQ(host.family_reading("acme_lm")->library, "libacme.so");
  EXPECT_EQ(host.family_named_by_checkpointer("ACME_2")->name, "acme");
  EXPECT_EQ(host.family_reading("llama"), nullptr);
  EXPECT_EQ(host.checkpointer_model_types(), (std::vector<std::string>{"ACME", "ACME_2"}));

  ft::Registry second;
  second.add_family(family("other", {"other_lm"}, {"ACME_2"}));
  const std::string msg =
      fttest::error_of<ft::PluginError>([&] { host.merge(std::move(second), "libother.so", nullptr); });
  EXPECT_NE(msg.find("family 'other' (libother.so) and family 'acme' (libacme.so) both claim the checkpointer "
                     "model_type \"ACME_2\""),
            std::string::npos)
      << msg;
  ft::Registry same_library;
  same_library.add_family(family("twice", {"t"}, {}));
  EXPECT_THROW(same_library.add_family(family("again", {"t"}, {})), ft::PluginError);
}
