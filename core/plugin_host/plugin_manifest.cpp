#include "plugin_host/plugin_manifest.h"

#include "plugin_host/elf_build_id.h"

#include <ft/durable_files.h>
#include <ft/errors.h>
#include <ft/plugin.h>
#include <ft/text.h>

#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <fstream>
#include <memory>

namespace fthost {

namespace {

using nlohmann::json;

// Raised when a manifest is found but cannot be used; the message is the reason.
struct Mismatch {
  std::string why;
};

// Bumped when the manifest's layout changes; another number means "not a manifest I read".
constexpr int kManifestFormat = 2;

// Which library a manifest describes: its GNU build ID where the linker wrote one (it survives
// strip, an install's RPATH rewrite and a wheel's unpacking, none of which change the code), else
// its size and modification time in seconds (`cmake --install` copies that to the second).
json library_identity(const std::string& path) {
  std::string build_id = elf_build_id(path);
  if (!build_id.empty()) return {{"build_id", build_id}};
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw ft::Error(path + ": " + ft::errno_text(errno));
  return {{"size", static_cast<std::uint64_t>(st.st_size)}, {"mtime_s", static_cast<std::int64_t>(st.st_mtim.tv_sec)}};
}

json fingerprint_json(const ft::BuildFingerprint& fp) {
  return {
      {"torch_version", fp.torch_version}, {"cxx11_abi", fp.cxx11_abi}, {"cuda", fp.cuda}, {"compiler", fp.compiler}};
}

json schema_json(const ft::Schema& schema) {
  json keys = json::array();
  for (const auto& key : schema.keys())
    keys.push_back({{"name", key.name},
                    {"type", ft::value_type_name(key.type)},
                    {"required", key.required},
                    {"default", key.default_toml},
                    {"help", key.help},
                    {"path_role", ft::path_role_name(key.path_role)}});
  return {{"allow_unknown_keys", schema.allows_unknown_keys()}, {"keys", keys}};
}

ft::ValueType value_type_from_name(const std::string& name) {
  for (auto type : {ft::ValueType::Bool, ft::ValueType::Int, ft::ValueType::Float, ft::ValueType::String,
                    ft::ValueType::List, ft::ValueType::Table, ft::ValueType::Any})
    if (ft::value_type_name(type) == name) return type;
  throw Mismatch{"unknown value type \"" + name + "\""};
}

ft::PathRole path_role_from_name(const std::string& name) {
  for (auto role : {ft::PathRole::None, ft::PathRole::InputFile, ft::PathRole::InputDirectory, ft::PathRole::InputPath,
                    ft::PathRole::CheckpointFiles, ft::PathRole::DatasetSource, ft::PathRole::OutputDirectory})
    if (ft::path_role_name(role) == name) return role;
  throw Mismatch{"unknown path role \"" + name + "\""};
}

ft::Schema schema_from_json(const json& j) {
  ft::Schema schema;
  for (const auto& key : j.at("keys")) {
    const auto type = value_type_from_name(key.at("type").get<std::string>());
    const auto name = key.at("name").get<std::string>();
    if (key.at("required").get<bool>())
      schema.required(name, type, key.at("help").get<std::string>());
    else
      schema.optional(name, type, key.at("default").get<std::string>(), key.at("help").get<std::string>());
    schema.path(name, path_role_from_name(key.at("path_role").get<std::string>()));
  }
  if (j.at("allow_unknown_keys").get<bool>()) schema.allow_unknown_keys();
  return schema;
}

// Registry::add takes the kind from an interface type, a manifest has it as a value: one stand-in
// interface per kind. Their factories make nothing; a described registry is never asked to
// instantiate (the commands that instantiate load the libraries).
template <ft::Kind K>
struct DescribedComponent {
  static constexpr ft::Kind kind = K;
  struct Args {};
};

template <ft::Kind K>
void add_described(ft::Registry& registry, std::string name, ft::Schema schema, std::string summary,
                   std::vector<std::string> capabilities) {
  registry.add<DescribedComponent<K>>(
      std::move(name), std::move(schema), std::move(summary),
      [](const ft::ConfigNode&, typename DescribedComponent<K>::Args) {
        return std::unique_ptr<DescribedComponent<K>>();
      },
      std::move(capabilities));
}

void add_component(ft::Registry& registry, const json& j) {
  const std::string kind_text = j.at("kind").get<std::string>();
  const auto kind = ft::kind_from_name(kind_text);
  if (!kind) throw Mismatch{"unknown component kind \"" + kind_text + "\""};
  auto name = j.at("name").get<std::string>();
  auto schema = schema_from_json(j.at("schema"));
  auto summary = j.at("summary").get<std::string>();
  auto capabilities = j.at("capabilities").get<std::vector<std::string>>();
  using ft::Kind;
  switch (*kind) {
#define FTHOST_DESCRIBED_KIND(K)                                                                    \
  case Kind::K:                                                                                     \
    return add_described<Kind::K>(registry, std::move(name), std::move(schema), std::move(summary), \
                                  std::move(capabilities));
    FTHOST_DESCRIBED_KIND(Model)
    FTHOST_DESCRIBED_KIND(Loss)
    FTHOST_DESCRIBED_KIND(Optimizer)
    FTHOST_DESCRIBED_KIND(LRScheduler)
    FTHOST_DESCRIBED_KIND(MetricLogger)
    FTHOST_DESCRIBED_KIND(Parallelism)
    FTHOST_DESCRIBED_KIND(Tokenizer)
    FTHOST_DESCRIBED_KIND(Dataset)
    FTHOST_DESCRIBED_KIND(Collate)
    FTHOST_DESCRIBED_KIND(Checkpointer)
    FTHOST_DESCRIBED_KIND(Profiler)
    FTHOST_DESCRIBED_KIND(TensorParallelPlan)
#undef FTHOST_DESCRIBED_KIND
  }
  throw Mismatch{"unknown component kind \"" + kind_text + "\""};
}

void expect(bool condition, const std::string& why) {
  if (!condition) throw Mismatch{why};
}

}  // namespace

std::string manifest_path(const std::string& library) { return library + ".manifest.json"; }

void write_plugin_manifest(const std::string& library, const LoadedPlugin& plugin, const ft::Registry& components_of) {
  json components = json::array();
  for (const auto* c : components_of.list())
    components.push_back({{"name", c->name},
                          {"kind", ft::kind_name(c->kind)},
                          {"summary", c->summary},
                          {"capabilities", c->capabilities},
                          {"schema", schema_json(c->schema)}});
  const json manifest = {
      {"fthost_plugin_manifest", kManifestFormat},
      {"host_abi", {FT_ABI_MAJOR, FT_ABI_MINOR}},
      {"fingerprint", fingerprint_json(ft::this_build_fingerprint())},
      {"library",
       {{"file", boost::filesystem::path(library).filename().string()}, {"identity", library_identity(library)}}},
      {"plugin", {{"name", plugin.name}, {"version", plugin.version}, {"abi", {plugin.abi_major, plugin.abi_minor}}}},
      {"components", components}};
  std::string text;
  try {
    text = manifest.dump(2) + "\n";
  } catch (const json::exception& e) {
    throw ft::Error(library + ": cannot write its manifest: " + e.what());
  }
  ft::write_text_file_atomically(manifest_path(library), text);
}

std::optional<DescribedPlugin> read_plugin_manifest(const std::string& library, std::string& why_not) {
  const std::string path = manifest_path(library);
  std::ifstream in(path);
  if (!in) {
    why_not = "no manifest " + path;
    return std::nullopt;
  }
  try {
    const json j = json::parse(in);
    expect(j.at("fthost_plugin_manifest") == kManifestFormat,
           "manifest format is not " + std::to_string(kManifestFormat));
    expect(j.at("host_abi") == json{FT_ABI_MAJOR, FT_ABI_MINOR}, "manifest written by a host of another plugin ABI");
    expect(j.at("fingerprint") == fingerprint_json(ft::this_build_fingerprint()),
           "manifest written by a host of another build fingerprint");
    const json& lib = j.at("library");
    expect(lib.at("file") == boost::filesystem::path(library).filename().string(), "manifest of another library");
    expect(lib.at("identity") == library_identity(library),
           "the library changed since its manifest was written (build ID, or size and modification time)");
    const json& info = j.at("plugin");
    const auto abi = info.at("abi").get<std::vector<std::uint32_t>>();
    expect(abi.size() == 2 && abi[0] == FT_ABI_MAJOR && abi[1] <= FT_ABI_MINOR, "plugin of another ABI");

    DescribedPlugin described{LoadedPlugin{library,
                                           info.at("name").get<std::string>(),
                                           info.at("version").get<std::string>(),
                                           abi[0],
                                           abi[1],
                                           {},
                                           true},
                              {}};
    for (const auto& component : j.at("components")) {
      add_component(described.components, component);
      described.plugin.components.push_back(component.at("name").get<std::string>());
    }
    return described;
  } catch (const Mismatch& m) {
    why_not = path + ": " + m.why;
  } catch (const std::exception& e) {
    why_not = path + ": unreadable: " + e.what();
  }
  return std::nullopt;
}

}  // namespace fthost
