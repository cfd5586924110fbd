// Plugin manifests (core/plugin_host/plugin_manifest.h): the registry a manifest describes is the one
// loading the library registers, field by field and as `fthost ls -v` prints it; a manifest
// that no longer matches its library (another build ID) is ignored and the library loaded.
#include "plugin_host/plugin_manifest.h"
#include "cli/commands.h"
#include "plugin_host/elf_build_id.h"
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
  nlohmann::json recorded_identity() const {
    return nlohmann::json::parse(fttest::read_file(fthost::manifest_path(library)))["library"]["identity"];
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

TEST(PluginManifest, RelinkedLibraryIsLoaded) {
  PluginCopy copy;
  // Another link writes another build ID: change the recorded one's first byte in the library.
  const std::string id = copy.recorded_identity().at("build_id");
  std::string bytes = fttest::read_file(copy.library);
  std::string binary_id;
  for (std::size_t i = 0; i + 1 < id.size(); i += 2)
    binary_id += static_cast<char>(std::stoi(id.substr(i, 2), nullptr, 16));
  const auto at = bytes.find(binary_id);
  ASSERT_NE(at, std::string::npos);
  bytes[at] = static_cast<char>(bytes[at] ^ 0x5a);
  std::ofstream(copy.library, std::ios::binary | std::ios::trunc) << bytes;
  expect_loaded_from_library(copy.load());
}

// strip, an install's RPATH rewrite and a wheel's unpacking change the size and modification
// time, not the code: the manifest still describes the library.
TEST(PluginManifest, LibraryOfTheSameBuildIdKeepsItsManifestThroughInstallAndStrip) {
  PluginCopy copy;
  std::ofstream(copy.library, std::ios::app | std::ios::binary) << '\0';  // data after the ELF image: still loads
  const timespec later{::time(nullptr) + 3600, 0};
  const timespec times[2] = {later, later};
  ASSERT_EQ(::utimensat(AT_FDCWD, copy.library.c_str(), times, 0), 0);
  const auto loader = copy.load();
  ASSERT_EQ(loader.plugins().size(), 1u);
  EXPECT_TRUE(loader.plugins()[0].from_manifest);
}

TEST(PluginManifest, BuildIdIsTheOneReadelfReads) {
  PluginCopy copy;
  const auto r = fttest::run_shell("readelf -n " + copy.library);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string id = copy.recorded_identity().at("build_id");
  EXPECT_FALSE(id.empty());
  EXPECT_NE(r.output.find("Build ID: " + id + "\n"), std::string::npos) << r.output;
  EXPECT_EQ(fthost::elf_build_id(copy.dir.file("libft_schedulers.so.manifest.json")), "");  // not ELF
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
