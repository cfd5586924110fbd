// torchtune.training.FullModelHFCheckpointer: full model weights in Hugging Face format.
//
// Loading maps the checkpoint's safetensors files and copies each tensor into the model's live
// parameter of the same Hugging Face name (Model::hf_parameters), converting dtype. Every name,
// shape and file is checked before the first copy, so a failed load leaves the model as it was.
//
// Saving writes `<output_dir>/<tag>/` as a model directory Hugging Face's from_pretrained reads:
// the weights (sharded like HF above max_shard_size), config.json and the source directory's
// tokenizer/generation files. It is built in the hidden staging directory ft::staging_directory
// names (with this process's pid) and installed only when complete and synced
// (ft/durable_files.h), so `<tag>` is always a whole checkpoint.
//
// It also stores the host's training checkpoints (ft::TrainingCheckpointStorage): the same
// model directory, written into the host's staging directory, and safetensors tensor files.
#include "checkpointers_components.h"
#include "safetensors.h"

#include <ft/checkpoint_files.h>

#include <ft/checkpointer.h>
#include <ft/clock.h>
#include <ft/config.h>
#include <ft/durable_files.h>
#include <ft/errors.h>
#include <ft/log.h>
#include <ft/registry.h>
#include <ft/text.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

namespace ft_checkpointers {

namespace {

namespace fs = std::filesystem;
using ft::ValueType;

// Hugging Face's names of a causal LM's output projection and the input embedding it ties to.
constexpr const char* kTiedOutputName = "lm_head.weight";
constexpr const char* kInputEmbeddingName = "model.embed_tokens.weight";

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

std::string megabytes(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

// Hugging Face's config.json name for a dtype.
std::string hf_torch_dtype(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::BFloat16: return "bfloat16";
    case c10::ScalarType::Half: return "float16";
    case c10::ScalarType::Double: return "float64";
    default: throw ft::Error(std::string("cannot save parameters of dtype ") + c10::toString(type));
  }
}

// Files of a model directory that are not weights or weight indexes: tokenizer, generation
// config, chat template, README... They travel with the saved weights so the output directory
// is a usable model on its own. config.json is written separately (with the saved dtype).
bool is_companion_file(const fs::directory_entry& entry) {
  if (!entry.is_regular_file()) return false;  // directories (and partial saves) never travel
  const std::string name = entry.path().filename().string();
  if (name == "config.json" || ft::ends_with(name, ".index.json")) return false;
  for (const char* weights : {".safetensors", ".bin", ".pt", ".pth"})
    if (ft::ends_with(name, weights)) return false;
  return true;
}

struct Settings {
  std::string checkpoint_dir;
  std::vector<std::string> checkpoint_files;
  std::string model_type;
  std::string output_dir;
  std::uint64_t max_shard_size = 0;
};

class FullModelHFCheckpointer final : public ft::Checkpointer, private ft::TrainingCheckpointStorage {
 public:
  explicit FullModelHFCheckpointer(Settings settings) : s_(std::move(settings)) {}

  bool load_model(ft::Model& model) override {
    if (s_.checkpoint_dir.empty()) return false;
    load(model, s_.checkpoint_dir, s_.checkpoint_files);
    return true;
  }

  std::string save_model(ft::Model& model, const std::string& tag) override {
    try {
      return save(model, tag);
    } catch (const fs::filesystem_error& e) {
      throw ft::Error("saving checkpoint \"" + tag + "\": " + e.what());
    }
  }

  ft::TrainingCheckpointStorage* training_checkpoint_storage() override { return this; }

 private:
  // ft::TrainingCheckpointStorage
  void load_model_from(ft::Model& model, const std::string& dir) override { load(model, dir, {}); }

  void write_model_files(const std::vector<ft::NamedTensor>& tensors, const ft::Model& model,
                         const std::string& dir) override {
    if (tensors.empty()) throw ft::Error("model has no parameters to save");
    try {
      write_model_directory(fs::path(dir), tensors, model);
    } catch (const fs::filesystem_error& e) {
      throw ft::Error("writing the model into " + dir + ": " + e.what());
    }
  }

  void write_tensors(const std::string& path, const std::vector<ft::NamedTensor>& tensors,
                     const std::map<std::string, std::string>& metadata) override {
    write_safetensors(path, tensors, metadata);
  }

  std::vector<ft::NamedTensor> read_tensors(const std::string& path) override {
    SafetensorsFile file(path);
    std::vector<ft::NamedTensor> out;
    for (const TensorRecord& r : file.records()) out.push_back({r.name, file.tensor(r)});
    return out;
  }

  void load(ft::Model& model, const std::string& dir, const std::vector<std::string>& listed) {
    const auto start = ft::Clock::now();
    const std::vector<SafetensorsFile> files = open_checkpoint(dir, listed);

    // By name; an entry may be several live parameters the checkpoint stores as one tensor.
    std::map<std::string, ft::NamedTensor> params;
    for (ft::NamedTensor& p : model.hf_parameters())
      if (!params.emplace(p.name, p).second)
        throw ft::Error("model lists parameter \"" + p.name + "\" twice (a bug in the model plugin)");

    // Plan every copy first: names, shapes and duplicates across shards.
    struct Copy {
      const ft::NamedTensor* param;
      const SafetensorsFile* file;
      const TensorRecord* record;
    };
    std::vector<Copy> copies;
    std::map<std::string, std::string> loaded_from;  // name -> file
    std::size_t ignored = 0;
    loaded_tied_lm_head_ = false;
    carried_.clear();
    for (const SafetensorsFile& file : files) {
      for (const TensorRecord& r : file.records()) {
        const std::string where = file.path() + ": tensor \"" + r.name + "\": ";
        auto it = params.find(r.name);
        if (it == params.end()) {
          if (model.carried_hf_name(r.name)) {
            // Not trained here, saved again exactly as loaded (dtype and bytes).
            carried_.push_back({r.name, file.tensor(r).clone()});
            continue;
          }
          if (model.ignorable_hf_name(r.name)) {
            ++ignored;
            if (r.name == kTiedOutputName) loaded_tied_lm_head_ = true;
            continue;
          }
          throw ft::Error(where + "unexpected tensor: the model has no parameter of that name (model_type " +
                          s_.model_type + ", " + std::to_string(params.size()) + " parameters)");
        }
        if (auto [prev, fresh] = loaded_from.emplace(r.name, file.path()); !fresh)
          throw ft::Error(where + "also in " + prev->second);
        const std::vector<std::int64_t> shape = ft::checkpoint_shape(it->second);
        if (shape != r.shape)
          throw ft::Error(where + "shape " + ft::shape_text(r.shape) + " in the checkpoint but " +
                          ft::shape_text(shape) + " in the model");
        copies.push_back({&it->second, &file, &r});
      }
    }
    std::vector<std::string> missing;
    for (const auto& [name, tensor] : params)
      if (!loaded_from.count(name)) missing.push_back(name);
    if (!missing.empty()) {
      const std::size_t shown = std::min<std::size_t>(missing.size(), 10);
      std::string names = join(std::vector<std::string>(missing.begin(), missing.begin() + shown), ", ");
      if (shown < missing.size()) names += ", ...";
      std::vector<std::string> paths;
      for (const auto& f : files) paths.push_back(f.path());
      throw ft::Error(std::to_string(missing.size()) + " model parameter(s) missing from the checkpoint (" +
                      join(paths, ", ") + "): " + names);
    }

    std::uint64_t bytes = 0;
    {
      torch::NoGradGuard no_grad;
      for (const Copy& c : copies) {
        ft::assign_checkpoint_value(*c.param, c.file->tensor(*c.record));
        bytes += c.record->byte_size();
      }
    }
    std::vector<std::string> names;
    for (const auto& f : files) names.push_back(fs::path(f.path()).filename().string());
    const double seconds = ft::seconds_since(start);
    ft::log::info("checkpointer: loaded {} tensors ({}) from {} in {} ({}){}{} in {:.2f} s", copies.size(),
                  megabytes(bytes), files.size() == 1 ? "1 file" : std::to_string(files.size()) + " files", dir,
                  join(names, ", "),
                  ignored ? ", ignored " + std::to_string(ignored) + " tensor(s) the model recomputes or ties" : "",
                  carried_.empty()
                      ? ""
                      : ", kept " + std::to_string(carried_.size()) + " tensor(s) it does not train to save unchanged",
                  seconds);
  }

  std::string save(ft::Model& model, const std::string& tag) {
    if (tag.empty() || tag[0] == '.' || tag.find('/') != std::string::npos)
      throw ft::Error("checkpoint tag \"" + tag + "\" must be a plain directory name not starting with '.'");
    const auto start = ft::Clock::now();
    const fs::path out(s_.output_dir);
    fs::create_directories(out);
    const fs::path final_dir = out / tag;
    // Hidden, so never mistaken for a checkpoint; ours to remove if this save fails, the host's
    // to remove if a crash leaves it (the contract in ft/durable_files.h).
    const fs::path partial = ft::staging_directory(final_dir.string(), ::getpid());

    std::vector<ft::NamedTensor> tensors;
    for (const ft::NamedTensor& p : model.hf_parameters()) tensors.push_back({p.name, ft::checkpoint_value(p), {}});
    if (tensors.empty()) throw ft::Error("model has no parameters to save");
    const c10::ScalarType dtype = tensors.front().tensor.scalar_type();
    ShardedWrite written;
    try {
      fs::remove_all(partial);  // left by an earlier failed save of this process
      fs::create_directories(partial);
      written = write_model_directory(partial, tensors, model);
      ft::install_directory(partial.string(), final_dir.string());
    } catch (...) {
      std::error_code ignored;
      fs::remove_all(partial, ignored);
      throw;
    }

    const double seconds = ft::seconds_since(start);
    ft::log::info("checkpointer: saved {} tensors ({}, {}) to {} ({} file{}) in {:.2f} s", tensors.size(),
                  megabytes(written.total_size), hf_torch_dtype(dtype), final_dir.string(), written.files.size(),
                  written.files.size() == 1 ? "" : "s", seconds);
    return final_dir.string();
  }

  // Weights, config.json and the source's companion files into the existing `dir`, synced.
  ShardedWrite write_model_directory(const fs::path& dir, const std::vector<ft::NamedTensor>& model_tensors,
                                     const ft::Model& model) const {
    std::vector<ft::NamedTensor> tensors = with_loaded_tied_copies(model_tensors);
    const c10::ScalarType dtype = tensors.front().tensor.scalar_type();
    tensors.insert(tensors.end(), carried_.begin(), carried_.end());
    ShardedWrite written = write_sharded_safetensors(dir.string(), tensors, s_.max_shard_size, {{"format", "pt"}});
    ft::write_text_file_atomically((dir / "config.json").string(), config_json(model, dtype));
    copy_companion_files(dir);
    ft::fsync_path(dir.string());
    return written;
  }

  // A tied model computes with one matrix, but the checkpoint it was loaded from may also store the
  // output projection (lm_head.weight, a copy of the embedding: torchtune's Qwen 3 conversion
  // writes one). The saved checkpoint keeps the key set it was loaded with, so it writes the copy
  // again, from the embedding being saved.
  std::vector<ft::NamedTensor> with_loaded_tied_copies(const std::vector<ft::NamedTensor>& tensors) const {
    if (!loaded_tied_lm_head_) return tensors;
    std::vector<ft::NamedTensor> out = tensors;
    const ft::NamedTensor* embedding = nullptr;
    for (const ft::NamedTensor& t : tensors) {
      if (t.name == kTiedOutputName) return tensors;  // the model saves it itself
      if (t.name == kInputEmbeddingName) embedding = &t;
    }
    if (!embedding)
      throw ft::Error(std::string("the loaded checkpoint stores ") + kTiedOutputName + ", tied to " +
                      kInputEmbeddingName + ", which the model does not save; its key set cannot be kept");
    out.push_back({kTiedOutputName, embedding->tensor, {}});
    return out;
  }

  // The source checkpoint's config.json (keeping everything HF put there) or the model's own,
  // with torch_dtype set to what was saved.
  std::string config_json(const ft::Model& model, c10::ScalarType dtype) const {
    const std::string source =
        s_.checkpoint_dir.empty() ? std::string() : (fs::path(s_.checkpoint_dir) / "config.json").string();
    const bool from_source = !source.empty() && fs::is_regular_file(source);
    const std::string what = from_source ? source : "the model's config.json";
    nlohmann::ordered_json config;
    try {
      if (from_source) {
        std::ifstream in(source);
        config = nlohmann::ordered_json::parse(in);
      } else {
        config = nlohmann::ordered_json::parse(model.hf_config_json());
      }
    } catch (const nlohmann::json::exception& e) {
      throw ft::Error(what + ": not valid JSON: " + e.what());
    }
    if (!config.is_object()) throw ft::Error(what + ": not a JSON object");
    config["torch_dtype"] = hf_torch_dtype(dtype);
    return config.dump(2) + "\n";
  }

  void copy_companion_files(const fs::path& into) const {
    if (s_.checkpoint_dir.empty()) return;
    for (const fs::directory_entry& entry : fs::directory_iterator(s_.checkpoint_dir))
      if (is_companion_file(entry))
        ft::copy_file_atomically(entry.path().string(), (into / entry.path().filename()).string());
  }

  Settings s_;
  // The last checkpoint loaded stored the tied output projection as a tensor of its own.
  bool loaded_tied_lm_head_ = false;
  // Tensors of the loaded checkpoint the model does not train (ft::Model::carried_hf_name), as
  // loaded, for every save.
  std::vector<ft::NamedTensor> carried_;
};

// Whether the run resumes: the checkpointer's or the top-level resume_from_checkpoint (true, or
// the path of a checkpoint directory).
bool resumes(const ft::ConfigNode& cfg) {
  if (cfg.get<bool>("resume_from_checkpoint")) return true;
  const ft::ConfigNode root(cfg.document(), "");
  if (!root.has("resume_from_checkpoint")) return false;
  try {
    return root.get<bool>("resume_from_checkpoint");
  } catch (const ft::ConfigError&) {
    return true;  // a checkpoint directory
  }
}

std::unique_ptr<ft::Checkpointer> make_checkpointer(const ft::ConfigNode& cfg, const ft::Checkpointer::Args& args) {
  if (!cfg.get<bool>("safe_serialization"))
    cfg.fail("safe_serialization", "only safetensors checkpoints are written; set safe_serialization = true");
  // torchtune reads recipe_checkpoint (its recipe_state.pt: epoch, optimizer, data position) only
  // when resuming, and so does this: fthost resumes from the training state it writes with every
  // checkpoint and cannot read that file, so a resume that names one is refused.
  if (!cfg.get<std::string>("recipe_checkpoint", "").empty() && resumes(cfg))
    cfg.fail("recipe_checkpoint",
             "torchtune's recipe_state.pt cannot be read: fthost resumes from the training state it saves with "
             "each checkpoint (docs/checkpointing.md); remove recipe_checkpoint");

  Settings s;
  s.model_type = cfg.get<std::string>("model_type");
  // The model families registered by the loaded plugins say which names exist.
  if (args.registry && !args.registry->family_named_by_checkpointer(s.model_type)) {
    const std::vector<std::string> types = args.registry->checkpointer_model_types();
    cfg.fail("model_type",
             "\"" + s.model_type + "\" names no model family of the loaded plugins" +
                 (types.empty() ? std::string(" (none registers one)") : "; one of " + join(types, ", ")));
  }

  s.checkpoint_dir = cfg.get<std::string>("checkpoint_dir");
  s.checkpoint_files = ft::listed_checkpoint_files(cfg, "checkpoint_files");
  if (s.checkpoint_dir.empty() && !s.checkpoint_files.empty())
    cfg.fail("checkpoint_files", "files are listed but checkpoint_dir is empty");
  if (!s.checkpoint_dir.empty()) {
    try {
      checkpoint_files_in(s.checkpoint_dir, s.checkpoint_files);  // fail at startup, not at load time
    } catch (const ft::Error& e) {
      cfg.fail(s.checkpoint_files.empty() ? "checkpoint_dir" : "checkpoint_files", e.what());
    }
  }

  s.output_dir = cfg.get<std::string>("output_dir", args.output_dir);
  if (s.output_dir.empty())
    cfg.fail("output_dir", "no output directory: set output_dir here or at the top level of the config");
  const std::int64_t max_shard_size = cfg.get<std::int64_t>("max_shard_size");
  if (max_shard_size <= 0) cfg.fail("max_shard_size", "must be a positive number of bytes");
  s.max_shard_size = static_cast<std::uint64_t>(max_shard_size);
  return std::make_unique<FullModelHFCheckpointer>(std::move(s));
}

}  // namespace

void register_hf_checkpointer(ft::Registry& reg) {
  ft::Schema s;
  s.required("model_type", ValueType::String,
             "model family, as torchtune names it (LLAMA3, QWEN2_5, ...: each model family plugin registers its own)")
      .optional("checkpoint_dir", ValueType::String, "\"\"",
                "Hugging Face model directory to load (empty: start from the model's initialisation)")
      .optional("checkpoint_files", ValueType::Any, "[]",
                "safetensors files in checkpoint_dir, or {filename_format, max_filename} (empty: "
                "model.safetensors.index.json, else model.safetensors)")
      .optional("output_dir", ValueType::String, "",
                "where <tag>/ checkpoints are written (default: the run's output_dir)")
      .optional("recipe_checkpoint", ValueType::String, "",
                "torchtune's recipe_state.pt, read only to resume: refused then (fthost resumes from its own state)")
      .optional(
          "resume_from_checkpoint", ValueType::Bool, "false",
          "torchtune's spelling: true resumes like the top-level resume_from_checkpoint = true (docs/checkpointing.md)")
      .optional("safe_serialization", ValueType::Bool, "true", "write safetensors (the only format written)")
      .optional("max_shard_size", ValueType::Int, "5000000000", "bytes per safetensors shard when saving")
      .path("checkpoint_dir", ft::PathRole::InputDirectory)
      .path("checkpoint_files", ft::PathRole::CheckpointFiles)
      .path("output_dir", ft::PathRole::OutputDirectory);
  reg.add<ft::Checkpointer>("torchtune.training.FullModelHFCheckpointer", std::move(s),
                            "full model weights as Hugging Face safetensors (sharded, with config.json)",
                            make_checkpointer, {ft::TrainingCheckpointStorage::capability});
}

}  // namespace ft_checkpointers
