// Plugin manifests (core/plugin_host/plugin_manifest.h): the registry a manifest describes is the one
// loading the library registers, field by field and as `fthost ls -v` prints it; a manifest
// that no longer matches its library is ignored and the library loaded.
#include "plugin_host/plugin_manifest.h"
#include "cli/commands.h"
#include "plugin_host/plugin_loader.h"
#include "test_helpers.h"

#include <ft/registry.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace {

namespace fs = boost::filesystem;

fthost::PluginLoader builtin_plugins(fthost::PluginLoader::Manifests manifests) {
  fthost::PluginLoader loader(manifests);
  loader.load_all({{FT_BUILTIN_PLUGIN_DIR, "default"}});
  return loader;
}

std::string listing(const ft::Registry& registry) {
  std::ostringstream out;
  fthost::print_components(out, registry, std::nullopt, /*verbose=*/true);
  return out.str();
}

void expect_same_component(const ft::ComponentInfo& a, const ft::ComponentInfo& b) {
  SCOPED_TRACE(a.name);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.summary, b.summary);
  EXPECT_EQ(a.library, b.library);
  EXPECT_EQ(a.capabilities, b.capabilities);
  EXPECT_EQ(a.schema.allows_unknown_keys(), b.schema.allows_unknown_keys());
  ASSERT_EQ(a.schema.keys().size(), b.schema.keys().size());
  for (std::size_t i = 0; i < a.schema.keys().size(); ++i) {
    const ft::KeySpec& x = a.schema.keys()[i];
    const ft::KeySpec& y = b.schema.keys()[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.type, y.type) << x.name;
    EXPECT_EQ(x.required, y.required) << x.name;
    EXPECT_EQ(x.default_toml, y.default_toml) << x.name;
    EXPECT_EQ(x.help, y.help) << x.name;
  }
}

TEST(PluginManifest, DescribesExactlyWhatLoadingTheLibraryRegisters) {
  const auto described = builtin_plugins(fthost::PluginLoader::Manifests::Use);
  const auto loaded = builtin_plugins(fthost::PluginLoader::Manifests::Ignore);
  ASSERT_GE(loaded.plugins().size(), 10u);
  ASSERT_EQ(described.plugins().size(), loaded.plugins().size());
  for (std::size_t i = 0; i < loaded.plugins().size(); ++i) {
    const auto& d = described.plugins()[i];
    const auto& l = loaded.plugins()[i];
    SCOPED_TRACE(l.path);
    EXPECT_TRUE(d.from_manifest) << "every built-in plugin has a current manifest";
    EXPECT_FALSE(l.from_manifest);
    EXPECT_EQ(d.path, l.path);
    EXPECT_EQ(d.name, l.name);
    EXPECT_EQ(d.version, l.version);
    EXPECT_EQ(d.abi_major, l.abi_major);
    EXPECT_EQ(d.abi_minor, l.abi_minor);
    EXPECT_EQ(d.components, l.components);
  }
  const auto d = described.registry().list();
  const auto l = loaded.registry().list();
  ASSERT_EQ(d.size(), l.size());
  for (std::size_t i = 0; i < l.size(); ++i) {
    expect_same_component(*d[i], *l[i]);
    EXPECT_EQ(d[i]->library_keepalive, nullptr) << "a described component holds no library";
    EXPECT_NE(l[i]->library_keepalive, nullptr);
  }
  // Some entries carry each part a manifest must keep: defaults, required keys, capabilities.
  const ft::ComponentInfo* adamw = loaded.registry().find("torch.optim.AdamW");
  ASSERT_NE(adamw, nullptr);
  ASSERT_NE(adamw->schema.find("lr"), nullptr);
  EXPECT_FALSE(adamw->schema.find("lr")->default_toml.empty());
  const ft::ComponentInfo* hf = loaded.registry().find("torchtune.training.FullModelHFCheckpointer");
  ASSERT_NE(hf, nullptr);
  EXPECT_FALSE(hf->capabilities.empty());
  EXPECT_EQ(listing(described.registry()), listing(loaded.registry()));
}

TEST(PluginManifest, ExecutableListsFromManifestsWhatLoadingListsInProcess) {
  const auto loaded = builtin_plugins(fthost::PluginLoader::Manifests::Ignore);
  const auto r = fttest::run_fthost("ls -v");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, listing(loaded.registry()));
}

// A copy of a small built-in plugin in a fresh directory, with a manifest of its own.
struct PluginCopy {
  fttest::TempDir dir;
  std::string library = dir.file("libft_schedulers.so");
  PluginCopy() {
    fs::copy_file(std::string(FT_BUILTIN_PLUGIN_DIR) + "/libft_schedulers.so", library);
    fthost::write_plugin_manifest(library);
  }
  fthost::PluginLoader load() const {
    fthost::PluginLoader loader(fthost::PluginLoader::Manifests::Use);
    loader.load_all({{library, "--plugin-dir"}});
    return loader;
  }
  std::int64_t recorded_mtime_s() const {
    return nlohmann::json::parse(fttest::read_file(fthost::manifest_path(library)))["library"]["mtime_s"];
  }
  void set_mtime_s(std::int64_t seconds) const {
    const timespec t{static_cast<time_t>(seconds), 0};
    const timespec times[2] = {t, t};
    ASSERT_EQ(::utimensat(AT_FDCWD, library.c_str(), times, 0), 0);
  }
};

// A loader whose one plugin was loaded from the library: its components can be instantiated.
void expect_loaded_from_library(const fthost::PluginLoader& loader) {
  ASSERT_EQ(loader.plugins().size(), 1u);
  EXPECT_FALSE(loader.plugins()[0].from_manifest);
  const ft::ComponentInfo* c =
      loader.registry().find("torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup");
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->library_keepalive, nullptr);
}

TEST(PluginManifest, CurrentManifestIsUsed) {
  PluginCopy copy;
  const auto loader = copy.load();
  ASSERT_EQ(loader.plugins().size(), 1u);
  EXPECT_TRUE(loader.plugins()[0].from_manifest);
  EXPECT_EQ(loader.plugins()[0].path, fs::canonical(copy.library).string());
  EXPECT_NE(loader.registry().find("torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup"), nullptr);
}

TEST(PluginManifest, LibraryNewerThanItsManifestIsLoaded) {
  PluginCopy copy;
  copy.set_mtime_s(copy.recorded_mtime_s() + 1);
  expect_loaded_from_library(copy.load());
}

TEST(PluginManifest, LibraryOfAnotherSizeIsLoaded) {
  PluginCopy copy;
  std::ofstream(copy.library, std::ios::app | std::ios::binary) << '\0';  // data after the ELF image: still loads
  copy.set_mtime_s(copy.recorded_mtime_s());                              // only the size differs
  expect_loaded_from_library(copy.load());
}

TEST(PluginManifest, ManifestOfAnotherHostAbiIsIgnored) {
  PluginCopy copy;
  auto manifest = nlohmann::json::parse(fttest::read_file(fthost::manifest_path(copy.library)));
  manifest["host_abi"][0] = manifest["host_abi"][0].get<int>() + 1;
  std::ofstream(fthost::manifest_path(copy.library)) << manifest.dump();
  expect_loaded_from_library(copy.load());
}

TEST(PluginManifest, UnreadableManifestIsIgnored) {
  PluginCopy copy;
  std::ofstream(fthost::manifest_path(copy.library)) << "{ not json";
  std::string why;
  EXPECT_FALSE(fthost::read_plugin_manifest(fs::canonical(copy.library).string(), why));
  EXPECT_NE(why.find("unreadable"), std::string::npos) << why;
  expect_loaded_from_library(copy.load());
}

TEST(PluginManifest, WritingTheManifestOfABrokenPluginFailsAsLoadingIt) {
  const std::string library = std::string(FT_TEST_PLUGIN_ROOT) + "/wrong_abi/libtest_wrong_abi.so";
  const std::string message = fttest::error_of([&] { fthost::write_plugin_manifest(library); });
  EXPECT_NE(message.find("plugin ABI"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(fthost::manifest_path(library)));
}

}  // namespace
