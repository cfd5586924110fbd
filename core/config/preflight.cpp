#include "config/preflight.h"

#include "config/byte_size.h"
#include "config/optimizer_state_size.h"
#include "config/recipe_schema.h"

#include <ft/checkpoint_files.h>
#include <ft/dataset_files.h>
#include <ft/errors.h>
#include <ft/text.h>

#include <nlohmann/json.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>

namespace fthost {

namespace {

namespace fs = std::filesystem;

// `<origin>: <table.key>: <message>`, as every configuration error is written.
std::string problem_at(const ft::ConfigNode& table, std::string_view key, const std::string& message) {
  try {
    table.fail(key, message);
  } catch (const ft::ConfigError& e) {
    return e.what();
  }
}

// The path as the run will open it: a relative one is relative to the working directory.
std::string shown(const std::string& path) {
  if (fs::path(path).is_absolute()) return path;
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  return ec ? path : path + " (relative to the working directory " + cwd.string() + ")";
}

// Why `path` cannot be read as a file, or nullopt when it can.
std::optional<std::string> unreadable_file(const std::string& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) return "no such file: " + shown(path);
  if (fs::is_directory(status)) return shown(path) + " is a directory; expected a file";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "cannot read " + shown(path) + ": " + ft::errno_text(errno);
  ::close(fd);
  return std::nullopt;
}

std::optional<std::string> unreadable_directory(const std::string& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) return "no such directory: " + shown(path);
  if (!fs::is_directory(status)) return shown(path) + " is a file; expected a directory";
  DIR* dir = ::opendir(path.c_str());
  if (!dir) return "cannot read the directory " + shown(path) + ": " + ft::errno_text(errno);
  ::closedir(dir);
  return std::nullopt;
}

std::optional<std::string> unreadable_path(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return unreadable_directory(path);
  return unreadable_file(path);
}

// The number of values a safetensors file holds, from its header; nullopt when the header cannot
// be read (the checkpointer says why when it loads the file).
std::optional<std::uint64_t> safetensors_values(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::uint64_t header_size = 0;
  if (!in.read(reinterpret_cast<char*>(&header_size), sizeof header_size) || header_size > (std::uint64_t{1} << 30))
    return std::nullopt;
  std::string header(header_size, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(header_size))) return std::nullopt;
  try {
    const nlohmann::json tensors = nlohmann::json::parse(header);
    std::uint64_t values = 0;
    for (const auto& [name, tensor] : tensors.items()) {
      if (name == "__metadata__") continue;
      std::uint64_t n = 1;
      for (const auto& d : tensor.at("shape")) n *= d.get<std::uint64_t>();
      values += n;
    }
    return values;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

class Preflight {
 public:
  Preflight(const ft::ConfigNode& root, const TrainingSettings& settings) : root_(root), settings_(settings) {}

  void check_table(const ft::ConfigNode& table, const ft::Schema& schema) {
    // Inputs first: the checkpoint's size is known before the output directory is checked.
    for (const auto& key : schema.keys())
      if (key.path_role != ft::PathRole::None && key.path_role != ft::PathRole::OutputDirectory && table.has(key.name))
        check_key(table, key);
    for (const auto& key : schema.keys())
      if (key.path_role == ft::PathRole::OutputDirectory && table.has(key.name)) check_key(table, key);
  }

  void check_resumed_checkpoint() {
    if (settings_.checkpoint.resume != CheckpointSettings::Resume::Path) return;
    const std::string& dir = settings_.checkpoint.resume_path;
    if (auto why = unreadable_directory(dir)) return add(root_, "resume_from_checkpoint", *why);
    const std::string manifest = (fs::path(dir) / "recipe_state" / "manifest.json").string();
    if (auto why = unreadable_file(manifest))
      add(root_, "resume_from_checkpoint",
          "not a checkpoint fthost wrote (" + *why + "; docs/checkpointing.md, \"Layout\")");
  }

  PreflightReport report() && { return std::move(report_); }

 private:
  void add(const ft::ConfigNode& table, std::string_view key, const std::string& message) {
    report_.problems.push_back(problem_at(table, key, message));
  }

  void check_key(const ft::ConfigNode& table, const ft::KeySpec& key) {
    switch (key.path_role) {
      case ft::PathRole::None: return;
      case ft::PathRole::InputFile:
      case ft::PathRole::InputDirectory:
      case ft::PathRole::InputPath: return check_input(table, key);
      case ft::PathRole::CheckpointFiles: return check_checkpoint_files(table, key.name);
      case ft::PathRole::DatasetSource: return check_dataset_source(table, key.name);
      case ft::PathRole::OutputDirectory: return check_output_directory(table, key.name);
    }
  }

  // A string key's value; nullopt (and nothing to check) when it is not a string or is empty.
  static std::optional<std::string> path_of(const ft::ConfigNode& table, std::string_view key) {
    try {
      std::string value = table.get<std::string>(key);
      if (!value.empty()) return value;
    } catch (const ft::ConfigError&) {
      // Not a string (`resume_from_checkpoint = true`): the schema check has judged it.
    }
    return std::nullopt;
  }

  void check_input(const ft::ConfigNode& table, const ft::KeySpec& key) {
    const auto path = path_of(table, key.name);
    if (!path) return;
    std::optional<std::string> why;
    if (key.path_role == ft::PathRole::InputFile) why = unreadable_file(*path);
    if (key.path_role == ft::PathRole::InputDirectory) why = unreadable_directory(*path);
    if (key.path_role == ft::PathRole::InputPath) why = unreadable_path(*path);
    if (why) add(table, key.name, *why);
  }

  void check_checkpoint_files(const ft::ConfigNode& table, const std::string& key) {
    const auto dir = path_of(table, "checkpoint_dir");
    std::error_code ec;
    if (!dir || !fs::is_directory(*dir, ec)) return;  // checkpoint_dir's own check reports it
    std::vector<std::string> files;
    try {
      const std::vector<std::string> listed = ft::listed_checkpoint_files(table, key);
      if (!listed.empty()) {
        // Every missing file, not only the first.
        for (const auto& name : listed) {
          const std::string path = (fs::path(*dir) / name).string();
          if (auto why = unreadable_file(path))
            add(table, key, *why);
          else
            files.push_back(path);
        }
        if (files.size() != listed.size()) return;
      } else {
        files = ft::resolve_checkpoint_files(*dir, {}).files;
        for (const auto& path : files)
          if (auto why = unreadable_file(path)) return add(table, key, *why);
      }
    } catch (const ft::ConfigError& e) {
      report_.problems.push_back(e.what());
      return;
    } catch (const ft::Error& e) {
      return add(table, "checkpoint_dir", e.what());  // no index or model.safetensors to read
    }
    std::uint64_t values = 0;
    for (const auto& path : files) {
      const auto n = safetensors_values(path);
      if (!n) return;
      values += *n;
    }
    const std::uint64_t bytes_per_value = settings_.dtype == c10::ScalarType::BFloat16 ? 2 : 4;
    // The weights and, where the run has an optimizer, its state.
    const double state = root_.is_table("optimizer")
                             ? optimizer_state_size(root_.table("optimizer"))
                                   .bytes(static_cast<std::int64_t>(values), static_cast<int>(bytes_per_value))
                             : 0.0;
    report_.checkpoint_bytes = values * bytes_per_value + static_cast<std::uint64_t>(state);
  }

  void check_dataset_source(const ft::ConfigNode& table, const std::string& key) {
    const auto source = path_of(table, key);
    if (!source) return;
    try {
      const ft::DatasetFiles found =
          ft::resolve_dataset_files(*source, ft::dataset_data_files(table), table.get<std::string>("split", "train"),
                                    table.get<std::string>("revision", "main"));
      for (const auto& file : found.files)
        if (auto why = unreadable_file(file))
          add(table, fs::path(file) == fs::path(*source) ? key : "data_files", *why);
    } catch (const ft::ConfigError& e) {
      report_.problems.push_back(e.what());
    } catch (const ft::Error& e) {
      add(table, key, e.what());
    }
  }

  void check_output_directory(const ft::ConfigNode& table, const std::string& key) {
    const auto path = path_of(table, key);
    if (!path) return;
    // The directory, or the nearest existing one above it, where it will be created.
    fs::path existing = fs::absolute(*path);
    std::error_code ec;
    while (!fs::exists(existing, ec) && existing.has_parent_path() && existing != existing.parent_path())
      existing = existing.parent_path();
    if (!fs::is_directory(existing, ec))
      return add(table, key, shown(existing.string()) + " is not a directory; checkpoints are written into one");
    if (::access(existing.c_str(), W_OK | X_OK) != 0)
      return add(table, key,
                 "cannot write in " + shown(existing.string()) + ": " + ft::errno_text(errno) +
                     (existing == fs::absolute(*path) ? "" : " (" + *path + " would be created in it)"));
    // Room for one checkpoint where the checkpoints go (checked once per directory).
    if (!report_.checkpoint_bytes || fs::absolute(*path) != fs::absolute(settings_.checkpoint.dir) ||
        !checked_room_.insert(existing.string()).second)
      return;
    struct statvfs fs_stats {};
    if (::statvfs(existing.c_str(), &fs_stats) != 0) return;
    const std::uint64_t free_bytes = static_cast<std::uint64_t>(fs_stats.f_bavail) * fs_stats.f_frsize;
    if (free_bytes < *report_.checkpoint_bytes)
      add(table, key,
          "one checkpoint needs about " + format_bytes(static_cast<double>(*report_.checkpoint_bytes)) +
              " (the model's weights and optimizer state at the training dtype), and the filesystem of " +
              shown(existing.string()) + " has " + format_bytes(static_cast<double>(free_bytes)) + " free");
  }

  const ft::ConfigNode& root_;
  const TrainingSettings& settings_;
  PreflightReport report_;
  std::set<std::string> checked_room_;
};

}  // namespace

PreflightReport preflight(const ft::Registry& registry, const ft::ConfigNode& root, const TrainingSettings& settings) {
  Preflight check(root, settings);
  // Components in file order, then the recipe's own keys: the checkpointer's input files size
  // the checkpoint before the run's output_dir is checked for room.
  for (const auto& key : root.keys()) {
    const auto kind = kind_of_table(key);
    if (!kind || !(root.is_table(key) || root.is_table_list(key))) continue;
    for (const auto& table : root.table_list(key)) check.check_table(table, registry.resolve(table, *kind).schema);
  }
  check.check_resumed_checkpoint();
  check.check_table(root, recipe_schema());
  return std::move(check).report();
}

std::string preflight_message(const PreflightReport& report) {
  std::string message = std::to_string(report.problems.size()) + " problem(s) with what the configuration names:";
  for (const auto& p : report.problems) message += "\n  " + p;
  return message;
}

}  // namespace fthost
