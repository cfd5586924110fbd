#include "train/training_state.h"

#include <ft/errors.h>
#include <ft/text.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace fthost {

namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

constexpr const char* kFormat = "fthost.recipe_state";
constexpr int kFormatVersion = 1;

// Typed access to the manifest's keys; every failure names the file and the key.
class ManifestReader {
 public:
  ManifestReader(const ordered_json& root, std::string path) : root_(root), path_(std::move(path)) {}

  template <class T>
  T get(const ordered_json& object, const std::string& key, const std::string& where = "") const {
    const std::string dotted = where.empty() ? key : where + "." + key;
    if (!object.is_object() || !object.contains(key))
      throw ft::Error(path_ + ": missing key \"" + dotted + "\" (not a complete fthost training checkpoint)");
    try {
      return object.at(key).get<T>();
    } catch (const nlohmann::json::exception&) {
      throw ft::Error(path_ + ": key \"" + dotted + "\" has the wrong type: " + object.at(key).dump());
    }
  }
  template <class T>
  T get(const std::string& key) const {
    return get<T>(root_, key);
  }
  const ordered_json& object(const std::string& key) const {
    if (!root_.contains(key) || !root_.at(key).is_object())
      throw ft::Error(path_ + ": missing key \"" + key + "\" (an object)");
    return root_.at(key);
  }
  template <class T>
  std::optional<T> nullable(const ordered_json& object, const std::string& key, const std::string& where) const {
    if (object.contains(key) && object.at(key).is_null()) return std::nullopt;
    return get<T>(object, key, where);
  }

 private:
  const ordered_json& root_;
  std::string path_;
};

}  // namespace

std::string optimizer_file_name(int rank, int world_size) {
  char name[96];
  std::snprintf(name, sizeof name, "%s/optimizer-rank-%05d-of-%05d.safetensors", kRecipeStateDir, rank, world_size);
  return name;
}

std::string manifest_path_in(const std::string& checkpoint_dir) {
  return (fs::path(checkpoint_dir) / kRecipeStateDir / kManifestName).string();
}

std::string manifest_json(const RecipeStateManifest& m) {
  const TrainingProgress& p = m.progress;
  ordered_json j;
  j["format"] = kFormat;
  j["format_version"] = kFormatVersion;
  j["seed"] = p.seed;
  j["epochs_run"] = p.epochs_run;
  j["total_epochs"] = p.total_epochs;
  j["max_steps_per_epoch"] = p.max_steps_per_epoch ? ordered_json(*p.max_steps_per_epoch) : ordered_json(nullptr);
  j["steps_run"] = p.steps_run;
  j["data"] = {{"epoch", p.epoch},
               {"micro_batches_in_epoch", p.micro_batches_in_epoch},
               {"batch_size", p.batch_size},
               {"gradient_accumulation_steps", p.gradient_accumulation_steps}};
  j["world_size"] = p.world_size;
  j["data_parallel_size"] = p.data_parallel_size;
  j["expert_parallel_size"] = p.expert_parallel_size;
  j["context_parallel_size"] = p.context_parallel_size;
  j["lr_scheduler"] =
      p.lr_scheduler_last_epoch ? ordered_json{{"last_epoch", *p.lr_scheduler_last_epoch}} : ordered_json(nullptr);
  j["optimizer"] = {{"sharded", m.optimizer_sharded}, {"files", m.optimizer_files}};
  j["rng"] = {{"file", m.rng_file}};
  ordered_json params = ordered_json::array();
  for (const auto& param : m.model_parameters) params.push_back({{"name", param.name}, {"shape", param.shape}});
  j["model"] = {{"dtype", m.model_dtype}, {"parameters", params}};
  ordered_json files = ordered_json::object();
  for (const auto& [name, size] : m.file_sizes) files[name] = size;
  j["files"] = files;
  return j.dump(2) + "\n";
}

RecipeStateManifest read_manifest(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw ft::Error(path + ": cannot read the checkpoint's manifest (missing: not a complete training checkpoint)");
  ordered_json root;
  try {
    root = ordered_json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw ft::Error(path + ": not valid JSON (corrupt or truncated): " + e.what());
  }
  if (!root.is_object()) throw ft::Error(path + ": not a JSON object");
  const ManifestReader r(root, path);
  if (r.get<std::string>("format") != kFormat)
    throw ft::Error(path + ": format \"" + r.get<std::string>("format") + "\", expected \"" + kFormat + "\"");
  if (const int version = r.get<int>("format_version"); version != kFormatVersion)
    throw ft::Error(path + ": format_version " + std::to_string(version) + "; this fthost reads version " +
                    std::to_string(kFormatVersion));

  RecipeStateManifest m;
  TrainingProgress& p = m.progress;
  p.seed = r.get<std::uint64_t>("seed");
  p.epochs_run = r.get<std::int64_t>("epochs_run");
  p.total_epochs = r.get<std::int64_t>("total_epochs");
  p.max_steps_per_epoch = r.nullable<std::int64_t>(root, "max_steps_per_epoch", "");
  p.steps_run = r.get<std::int64_t>("steps_run");
  const ordered_json& data = r.object("data");
  p.epoch = r.get<std::int64_t>(data, "epoch", "data");
  p.micro_batches_in_epoch = r.get<std::int64_t>(data, "micro_batches_in_epoch", "data");
  p.batch_size = r.get<std::int64_t>(data, "batch_size", "data");
  p.gradient_accumulation_steps = r.get<std::int64_t>(data, "gradient_accumulation_steps", "data");
  p.world_size = r.get<int>("world_size");
  p.data_parallel_size = r.get<int>("data_parallel_size");
  // Checkpoints written before expert parallelism existed hold every expert on every rank.
  p.expert_parallel_size = root.contains("expert_parallel_size") ? r.get<int>("expert_parallel_size") : 1;
  p.context_parallel_size = root.contains("context_parallel_size") ? r.get<int>("context_parallel_size") : 1;
  if (!root.contains("lr_scheduler"))
    throw ft::Error(path + ": missing key \"lr_scheduler\" (null without a scheduler)");
  if (!root.at("lr_scheduler").is_null())
    p.lr_scheduler_last_epoch = r.get<std::int64_t>(root.at("lr_scheduler"), "last_epoch", "lr_scheduler");
  const ordered_json& optimizer = r.object("optimizer");
  m.optimizer_sharded = r.get<bool>(optimizer, "sharded", "optimizer");
  m.optimizer_files = r.get<std::vector<std::string>>(optimizer, "files", "optimizer");
  m.rng_file = r.get<std::string>(r.object("rng"), "file", "rng");
  const ordered_json& model = r.object("model");
  m.model_dtype = r.get<std::string>(model, "dtype", "model");
  if (!model.contains("parameters") || !model.at("parameters").is_array())
    throw ft::Error(path + ": missing key \"model.parameters\" (a list)");
  for (const auto& param : model.at("parameters"))
    m.model_parameters.push_back({r.get<std::string>(param, "name", "model.parameters[]"),
                                  r.get<std::vector<std::int64_t>>(param, "shape", "model.parameters[]")});
  for (const auto& [name, size] : r.object("files").items()) {
    if (!size.is_number_unsigned()) throw ft::Error(path + ": key \"files." + name + "\": expected a byte count");
    m.file_sizes[name] = size.get<std::uint64_t>();
  }
  if (m.optimizer_files.empty()) throw ft::Error(path + ": key \"optimizer.files\" lists no file");
  return m;
}

std::vector<ParameterShape> parameter_shapes(ft::Model& model) {
  std::vector<ParameterShape> out;
  for (const ft::NamedTensor& p : model.hf_parameters()) out.push_back({p.name, ft::checkpoint_shape(p)});
  return out;
}

void check_resumable(const RecipeStateManifest& m, const std::string& manifest_path,
                     const std::vector<ParameterShape>& model, int world_size, int data_parallel_size,
                     int expert_parallel_size, int context_parallel_size) {
  const std::string another = manifest_path + ": the checkpoint belongs to another model: ";
  std::map<std::string, const ParameterShape*> ours;
  for (const auto& p : model) ours[p.name] = &p;
  for (const auto& saved : m.model_parameters) {
    auto it = ours.find(saved.name);
    if (it == ours.end())
      throw ft::Error(another + "it has parameter \"" + saved.name + "\", this model has none of that name");
    if (it->second->shape != saved.shape)
      throw ft::Error(another + "parameter \"" + saved.name + "\" is " + ft::shape_text(saved.shape) + " there, " +
                      ft::shape_text(it->second->shape) + " in this model");
    ours.erase(it);
  }
  if (!ours.empty())
    throw ft::Error(another + "this model's parameter \"" + ours.begin()->first + "\" is not in it (" +
                    std::to_string(ours.size()) + " missing)");

  const TrainingProgress& p = m.progress;
  if (p.world_size != world_size || p.data_parallel_size != data_parallel_size)
    throw ft::Error(manifest_path + ": written by a run of world size " + std::to_string(p.world_size) + " (" +
                    std::to_string(p.data_parallel_size) + " data-parallel ranks), this run has " +
                    std::to_string(world_size) + " (" + std::to_string(data_parallel_size) +
                    "); resume with the same number of ranks (--nproc-per-node)");
  if (p.expert_parallel_size != expert_parallel_size)
    throw ft::Error(manifest_path + ": written by a run with expert_parallel_dim = " +
                    std::to_string(p.expert_parallel_size) + ", this run has " + std::to_string(expert_parallel_size) +
                    " (each rank's optimizer state holds its share of the experts); resume with the same "
                    "expert_parallel_dim");
  if (p.context_parallel_size != context_parallel_size)
    throw ft::Error(manifest_path +
                    ": written by a run with context_parallel_dim = " + std::to_string(p.context_parallel_size) +
                    ", this run has " + std::to_string(context_parallel_size) +
                    " (the ranks of a context-parallel group read the same samples, so the data order differs); "
                    "resume with the same context_parallel_dim");

  const fs::path dir = fs::path(manifest_path).parent_path().parent_path();
  for (const auto& [name, size] : m.file_sizes) {
    const fs::path file = dir / name;
    std::error_code ec;
    const auto actual = fs::file_size(file, ec);
    if (ec) throw ft::Error(file.string() + ": missing from the checkpoint (" + manifest_path + " lists it)");
    if (actual != size)
      throw ft::Error(file.string() + ": " + std::to_string(actual) + " bytes, but " + manifest_path + " records " +
                      std::to_string(size) + " (truncated or modified)");
  }
}

TrainingProgress progress_at(const TrainingSettings& s, int world_size, int data_parallel_size, std::int64_t steps_run,
                             std::int64_t epoch, std::int64_t micro_batches_in_epoch,
                             std::optional<std::int64_t> lr_scheduler_last_epoch) {
  TrainingProgress p;
  p.seed = s.seed;
  p.epochs_run = epoch;
  p.total_epochs = s.epochs;
  p.max_steps_per_epoch = s.max_steps_per_epoch;
  p.steps_run = steps_run;
  p.epoch = epoch;
  p.micro_batches_in_epoch = micro_batches_in_epoch;
  p.batch_size = s.batch_size;
  p.gradient_accumulation_steps = s.gradient_accumulation_steps;
  p.world_size = world_size;
  p.data_parallel_size = data_parallel_size;
  p.expert_parallel_size = s.expert_parallel_dim;
  p.context_parallel_size = s.context_parallel_dim;
  p.lr_scheduler_last_epoch = lr_scheduler_last_epoch;
  return p;
}

}  // namespace fthost
