#include "mlflow_file_store.h"

#include "python_str.h"
#include "run_identity.h"

#include <ft/durable_files.h>
#include <ft/errors.h>
#include <ft/text.h>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <boost/filesystem.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <random>

namespace ft_mlflow {

namespace fs = boost::filesystem;

namespace {

// YAML's single-quoted scalar: only the quote itself is escaped (doubled).
std::string yaml_string(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string file_uri(const fs::path& path) { return "file://" + path.string(); }

// A key's file in a run's metrics/, params/ or tags/ directory. MLflow's names may hold '/'
// (sub-directories) but never "..": its own validation, repeated here.
fs::path entry_path(const fs::path& dir, const std::string& key) {
  if (key.empty() || key.size() > 250 || key.find("..") != std::string::npos || key.front() == '/')
    throw ft::Error("MLFlowLogger: \"" + key + "\" is not a name MLflow takes (at most 250 characters, no '..')");
  return dir / key;
}

void write_whole(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  ft::write_text_file_atomically(path.string(), text);
}

void append_line(const fs::path& path, const std::string& line) {
  fs::create_directories(path.parent_path());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw ft::Error("MLFlowLogger: " + path.string() + ": " + ft::errno_text(errno));
  const ssize_t written = ::write(fd, line.data(), line.size());
  const int write_errno = errno;
  ::close(fd);
  if (written != static_cast<ssize_t>(line.size()))
    throw ft::Error("MLFlowLogger: " + path.string() + ": " +
                    (written < 0 ? ft::errno_text(write_errno) : std::string("short write")));
}

std::string read_whole(const fs::path& path) {
  std::ifstream in(path.string(), std::ios::binary);
  if (!in) throw ft::Error("MLFlowLogger: " + path.string() + " cannot be read");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct RunInfo {
  std::string run_id, run_name, experiment_id, artifact_uri, user_id;
  RunStatus status = RunStatus::Running;
  std::int64_t start_time = 0;
  std::optional<std::int64_t> end_time;
};

// The run's meta.yaml as MLflow 3 writes it (keys sorted, as PyYAML dumps them).
std::string run_meta_yaml(const RunInfo& run, bool with_deleted_time) {
  std::string text;
  text += "artifact_uri: " + yaml_string(run.artifact_uri) + "\n";
  if (with_deleted_time) text += "deleted_time: null\n";
  text += "end_time: " + (run.end_time ? std::to_string(*run.end_time) : std::string("null")) + "\n";
  text += "entry_point_name: ''\n";
  text += "experiment_id: " + yaml_string(run.experiment_id) + "\n";
  text += "lifecycle_stage: active\n";
  text += "run_id: " + run.run_id + "\n";
  text += "run_name: " + yaml_string(run.run_name) + "\n";
  text += "source_name: ''\n";
  text += "source_type: 4\n";  // LOCAL
  text += "source_version: ''\n";
  text += "start_time: " + std::to_string(run.start_time) + "\n";
  text += "status: " + std::to_string(static_cast<int>(run.status)) + "\n";
  text += "tags: []\n";
  text += "user_id: " + yaml_string(run.user_id) + "\n";
  return text;
}

std::string experiment_meta_yaml(const std::string& id, const std::string& name, const fs::path& location) {
  const std::string now = std::to_string(ft_loggers::unix_time_ms());
  return "artifact_location: " + yaml_string(file_uri(location)) + "\ncreation_time: " + now +
         "\neffective_trace_archival_retention: null\nexperiment_id: " + yaml_string(id) +
         "\nlast_update_time: " + now + "\nlifecycle_stage: active\nname: " + yaml_string(name) +
         "\ntrace_location: null\nworkspace: default\n";
}

class FileStore final : public Store {
 public:
  explicit FileStore(fs::path root) : root_(std::move(root)) {
    try {
      // A new store, or an empty directory made for it, starts with MLflow's default experiment.
      if (!fs::exists(root_)) fs::create_directories(root_);
      if (!fs::is_directory(root_)) throw ft::Error(root_.string() + " is not a directory");
      if (fs::is_empty(root_))
        write_whole(root_ / "0" / "meta.yaml", experiment_meta_yaml("0", "Default", root_ / "0"));
      fs::create_directories(root_ / ".trash");
    } catch (const fs::filesystem_error& e) {
      throw ft::Error(std::string("MLFlowLogger: the file store ") + e.what());
    }
  }

  std::string experiment_id(const std::string& name) override {
    if (name.empty()) {
      if (!fs::exists(root_ / "0" / "meta.yaml"))
        throw ft::Error("MLFlowLogger: " + describe() + " has no default experiment (0/meta.yaml)");
      return "0";
    }
    for (const auto& entry : fs::directory_iterator(root_)) {
      const std::string id = entry.path().filename().string();
      if (id.find_first_not_of("0123456789") != std::string::npos || !fs::exists(entry.path() / "meta.yaml")) continue;
      const YAML::Node meta = read_yaml(entry.path() / "meta.yaml");
      if (meta["name"].as<std::string>("") != name) continue;
      if (meta["lifecycle_stage"].as<std::string>("active") != "active")
        throw ft::Error("MLFlowLogger: experiment \"" + name + "\" in " + describe() +
                        " was deleted; restore it (mlflow experiments restore) or choose another experiment_name");
      return id;
    }
    for (;;) {  // MLflow's ids: 18 random digits
      std::random_device seed;
      std::mt19937_64 rng((static_cast<std::uint64_t>(seed()) << 32) ^ seed());
      std::string id = std::to_string(1 + rng() % 9);
      while (id.size() < 18) id += static_cast<char>('0' + rng() % 10);
      if (fs::exists(root_ / id)) continue;
      write_whole(root_ / id / "meta.yaml", experiment_meta_yaml(id, name, root_ / id));
      return id;
    }
  }

  std::string create_run(const std::string& experiment_id, const std::string& run_name, const std::string& user,
                         std::int64_t start_ms, const std::vector<KeyValue>& tags) override {
    RunInfo run;
    run.run_id = new_run_id();
    run.run_name = run_name;
    run.experiment_id = experiment_id;
    run.user_id = user;
    run.start_time = start_ms;
    const fs::path dir = root_ / experiment_id / run.run_id;
    run.artifact_uri = file_uri(dir / "artifacts");
    for (const char* sub : {"metrics", "params", "artifacts"}) fs::create_directories(dir / sub);
    write_whole(dir / "meta.yaml", run_meta_yaml(run, true));
    for (const auto& [key, value] : tags) write_whole(entry_path(dir / "tags", key), value);
    return run.run_id;
  }

  void resume_run(const std::string& run_id) override {
    RunInfo run = read_run(run_id);
    run.status = RunStatus::Running;
    run.end_time.reset();
    write_whole(run_dir(run_id) / "meta.yaml", run_meta_yaml(run, false));
  }

  void log_batch(const std::string& run_id, const std::vector<Metric>& metrics, const std::vector<KeyValue>& params,
                 const std::vector<KeyValue>& tags) override {
    const fs::path dir = run_dir(run_id);
    for (const auto& [key, value] : params) {
      const fs::path path = entry_path(dir / "params", key);
      if (fs::exists(path)) {
        const std::string logged = read_whole(path);
        if (logged != value)
          throw ft::Error("MLFlowLogger: param \"" + key + "\" of run " + run_id + " was logged as \"" + logged +
                          "\" and is now \"" + value +
                          "\"; MLflow's params never change. Resume the run with the config it started with, or "
                          "start a new run (leave run_id unset)");
        continue;
      }
      write_whole(path, value);
    }
    for (const auto& metric : metrics)
      append_line(entry_path(dir / "metrics", metric.key), std::to_string(metric.timestamp_ms) + " " +
                                                               ft_loggers::python_float_str(metric.value) + " " +
                                                               std::to_string(metric.step) + "\n");
    for (const auto& [key, value] : tags) write_whole(entry_path(dir / "tags", key), value);
  }

  void log_artifact(const std::string& run_id, const std::string& artifact_path, const std::string& content) override {
    write_whole(entry_path(run_dir(run_id) / "artifacts", artifact_path), content);
  }

  void end_run(const std::string& run_id, RunStatus status, std::int64_t end_ms) override {
    RunInfo run = read_run(run_id);
    run.status = status;
    run.end_time = end_ms;
    write_whole(run_dir(run_id) / "meta.yaml", run_meta_yaml(run, false));
  }

  std::string describe() const override { return "the MLflow file store at " + root_.string(); }

 private:
  static std::string new_run_id() {
    std::random_device seed;
    std::mt19937_64 rng((static_cast<std::uint64_t>(seed()) << 32) ^ seed());
    return fmt::format("{:016x}{:016x}", rng(), rng());
  }

  YAML::Node read_yaml(const fs::path& path) const {
    try {
      return YAML::LoadFile(path.string());
    } catch (const YAML::Exception& e) {
      throw ft::Error("MLFlowLogger: " + path.string() + " is not MLflow's meta.yaml: " + e.what());
    }
  }

  fs::path run_dir(const std::string& run_id) {
    if (auto found = run_dirs_.find(run_id); found != run_dirs_.end()) return found->second;
    if (run_id.size() != 32 || run_id.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw ft::Error("MLFlowLogger: \"" + run_id + "\" is not an MLflow run id (32 hexadecimal characters)");
    for (const auto& entry : fs::directory_iterator(root_)) {
      const fs::path candidate = entry.path() / run_id;
      if (fs::exists(candidate / "meta.yaml")) return run_dirs_[run_id] = candidate;
    }
    throw ft::Error("MLFlowLogger: no run " + run_id + " in " + describe() +
                    " (run_id, or $MLFLOW_RUN_ID, names a run to continue)");
  }

  RunInfo read_run(const std::string& run_id) {
    const fs::path dir = run_dir(run_id);
    const YAML::Node meta = read_yaml(dir / "meta.yaml");
    RunInfo run;
    try {
      run.run_id = run_id;
      run.run_name = meta["run_name"].as<std::string>("");
      run.experiment_id = meta["experiment_id"].as<std::string>();
      run.artifact_uri = meta["artifact_uri"].as<std::string>();
      run.user_id = meta["user_id"].as<std::string>("");
      run.start_time = meta["start_time"].as<std::int64_t>();
      run.status = static_cast<RunStatus>(meta["status"].as<int>());
    } catch (const YAML::Exception& e) {
      throw ft::Error("MLFlowLogger: " + (dir / "meta.yaml").string() + " is not a run's meta.yaml: " + e.what());
    }
    if (meta["lifecycle_stage"].as<std::string>("active") != "active")
      throw ft::Error("MLFlowLogger: run " + run_id + " in " + describe() + " was deleted");
    return run;
  }

  fs::path root_;
  std::map<std::string, fs::path> run_dirs_;
};

}  // namespace

std::unique_ptr<Store> open_file_store(const std::string& root) {
  return std::make_unique<FileStore>(fs::absolute(root).lexically_normal());
}

}  // namespace ft_mlflow
