#include "config/shipped_configs.h"

#include "ft_host/suggest.h"

#include <ft/errors.h>

#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/filesystem.hpp>

#include <algorithm>
#include <set>

namespace fthost {

namespace fs = boost::filesystem;

namespace {

const std::vector<std::string> kExtensions = {".yaml", ".yml", ".toml"};

}  // namespace

bool has_config_extension(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  return std::find(kExtensions.begin(), kExtensions.end(), ext) != kExtensions.end();
}

std::string shipped_config_dir() {
  const fs::path exe = boost::dll::program_location();
  return (exe.parent_path().parent_path() / FTHOST_CONFIG_SUBDIR).string();
}

std::vector<std::string> shipped_config_names() {
  std::set<std::string> names;
  const fs::path root = shipped_config_dir();
  boost::system::error_code ec;
  if (!fs::is_directory(root, ec)) return {};
  for (fs::recursive_directory_iterator it(root, fs::directory_options::follow_directory_symlink, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (!fs::is_regular_file(it->path(), ec) || !has_config_extension(it->path().string())) continue;
    fs::path relative = it->path().lexically_relative(root);
    names.insert(relative.replace_extension().generic_string());
  }
  return {names.begin(), names.end()};
}

std::optional<std::string> find_shipped_config(const std::string& name) {
  return find_config_named(shipped_config_dir(), name);
}

std::optional<std::string> find_config_named(const std::string& dir, const std::string& name) {
  if (name.empty() || fs::path(name).is_absolute()) return std::nullopt;
  const fs::path root = dir;
  boost::system::error_code ec;
  auto file_at = [&](const fs::path& p) -> std::optional<std::string> {
    // `..` could leave the config directory: only names that stay inside it are shipped configs.
    if (p.lexically_normal().lexically_relative(root).string().rfind("..", 0) == 0) return std::nullopt;
    if (fs::is_regular_file(p, ec)) return p.string();
    return std::nullopt;
  };
  if (has_config_extension(name)) return file_at(root / name);
  std::vector<std::string> found;
  for (const auto& ext : kExtensions)
    if (auto file = file_at(root / (name + ext))) found.push_back(*file);
  if (found.empty()) return std::nullopt;
  if (found.size() > 1) {
    std::string files;
    for (std::size_t i = 0; i < found.size(); ++i)
      files += (i == 0 ? "" : i + 1 == found.size() ? " and " : ", ") + found[i];
    throw ft::Error("config name '" + name + "' is ambiguous: " + files +
                    " share it; give the name with its extension");
  }
  return found[0];
}

std::string resolve_config_argument(const std::string& config) {
  boost::system::error_code ec;
  if (fs::exists(config, ec)) return config;
  if (auto shipped = find_shipped_config(config)) return *shipped;
  // A path with a config extension is a file the user meant; "cannot open" says more of it than
  // the shipped names would, unless it is close to one of them.
  if (has_config_extension(config) && ft::detail::close_matches(config, shipped_config_names(), 1).empty())
    return config;
  throw ft::ConfigError("--config: " + unknown_config_message(config));
}

std::string unknown_config_message(const std::string& name) {
  std::string msg = "'" + name + "' is neither a file nor a shipped config";
  const std::vector<std::string> near = ft::detail::close_matches(name, shipped_config_names(), 3);
  if (!near.empty()) {
    msg += "; did you mean ";
    for (std::size_t i = 0; i < near.size(); ++i) msg += (i ? ", '" : "'") + near[i] + "'";
    msg += "?";
  }
  return msg + " (`fthost ls configs` lists the shipped configs)";
}

}  // namespace fthost
