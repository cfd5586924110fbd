#include "train/checkpoint_manager.h"

#include "train/checkpoint_directories.h"

#include <ft/clock.h>
#include <ft/durable_files.h>
#include <ft/errors.h>
#include <ft/log.h>
#include <ft/model_expert_parallelism.h>
#include <ft/model_tensor_parallelism.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <unistd.h>

namespace fthost {

namespace {

namespace fs = std::filesystem;
using ft::Clock;
using ft::seconds_since;

constexpr const char* kRngTensorName = "torch_cpu_generator";

std::string marker_name(int rank) { return "rank-" + std::to_string(rank) + ".done"; }

std::string dtype_name(c10::ScalarType type) { return c10::toString(type); }

std::vector<ft::NamedTensor> cpu_copies(const std::vector<ft::NamedTensor>& tensors) {
  std::vector<ft::NamedTensor> out;
  out.reserve(tensors.size());
  for (const auto& t : tensors) {
    // One fused entry at a time (Phi-3's qkv_proj): concatenated, copied, then dropped.
    const at::Tensor value = ft::checkpoint_value(t).detach();
    out.push_back({t.name, value.to(at::kCPU, value.scalar_type(), /*non_blocking=*/false, /*copy=*/true), {}});
  }
  return out;
}

// An exception thrown inside a plugin refers to that plugin's code (its inline destructor), and
// the plugin may be unloaded before main() is done with it: errors out of the checkpointer and
// optimizer are rethrown as the host's own.
template <class Fn>
void with_host_errors(Fn&& fn) {
  try {
    fn();
  } catch (const ft::Error& e) {
    throw ft::Error(e.what());
  }
}

// The registry declared the role (checkpointer_role_problem checked it); a plugin whose object
// then has none contradicts its own registration.
ft::TrainingCheckpointStorage& storage_of(ft::Checkpointer& checkpointer) {
  ft::TrainingCheckpointStorage* storage = checkpointer.training_checkpoint_storage();
  if (!storage)
    throw ft::Error("checkpointer._component_: the checkpointer's registration declares the \"" +
                    std::string(ft::TrainingCheckpointStorage::capability) +
                    "\" capability, but its training_checkpoint_storage() returned none (a bug in its plugin); "
                    "every run saves training checkpoints");
  return *storage;
}

// Why the checkpoint in `dir` cannot be resumed from ("" when every file its manifest lists is
// there with the recorded size and its safetensors headers are whole): a checkpoint can be
// damaged after it was completed (a disk filling up on copy, a host lost while a copy was made).
std::string defect_of(const std::string& dir, const RecipeStateManifest& manifest) {
  for (const auto& [name, size] : manifest.file_sizes) {
    const fs::path file = fs::path(dir) / name;
    std::error_code ec;
    const auto actual = fs::file_size(file, ec);
    if (ec) return file.string() + " is missing";
    if (actual != size)
      return file.string() + " has " + std::to_string(actual) + " bytes, the manifest records " + std::to_string(size) +
             " (truncated or modified)";
    if (file.extension() == ".safetensors") {
      // The 8-byte little-endian header length, then a JSON object of that length.
      std::ifstream in(file, std::ios::binary);
      std::uint64_t header = 0;
      in.read(reinterpret_cast<char*>(&header), sizeof header);
      char first = 0;
      if (!in || header < 2 || header > actual - 8 || !in.get(first) || first != '{')
        return file.string() + " is not a whole safetensors file (its header is damaged)";
    }
  }
  for (const auto& name : manifest.optimizer_files)
    if (!fs::exists(fs::path(dir) / name)) return (fs::path(dir) / name).string() + " is missing";
  return "";
}

// `resume_from_checkpoint = true`: the newest checkpoint that is intact. A newer one whose
// manifest cannot be read or whose files are missing, truncated or damaged is refused with the
// reason, and the one before it tried; when every one is damaged, the run stops rather than
// start over (which would overwrite them).
std::optional<ResumePoint> newest_intact_checkpoint(const std::string& output_dir) {
  CheckpointScan scan = scan_checkpoints(output_dir);
  std::vector<std::string> refused;
  for (const auto& bad : scan.unreadable) {
    refused.push_back(bad.why);
    ft::log::warn("resume_from_checkpoint: refusing {}: {}", bad.dir, bad.why);
  }
  auto& readable = scan.readable;
  for (auto it = readable.rbegin(); it != readable.rend(); ++it) {
    const std::string defect = defect_of(it->dir, it->manifest);
    if (!defect.empty()) {
      refused.push_back(it->dir + ": " + defect);
      ft::log::warn("resume_from_checkpoint: refusing {}: {}; trying the previous complete checkpoint", it->dir,
                    defect);
      continue;
    }
    if (!refused.empty()) ft::log::warn("resume_from_checkpoint: resuming from {} instead", it->dir);
    ResumePoint point;
    point.dir = it->dir;
    point.manifest_path = manifest_path_in(it->dir);
    point.manifest = std::move(it->manifest);
    return point;
  }
  if (!refused.empty()) {
    std::string reasons;
    for (const auto& r : refused) reasons += "\n  " + r;
    throw ft::Error("resume_from_checkpoint: every checkpoint in " + output_dir +
                    " is damaged; not starting over (that would replace them). Refused:" + reasons);
  }
  ft::log::warn("resume_from_checkpoint: no complete checkpoint in {} yet; training from the beginning", output_dir);
  return std::nullopt;
}

}  // namespace

void load_resumed_model(ft::Checkpointer& checkpointer, ft::Model& model, const ResumePoint& point) {
  ft::TrainingCheckpointStorage& storage = storage_of(checkpointer);
  with_host_errors([&] { storage.load_model_from(model, point.dir); });
}

std::optional<ResumePoint> find_resume_point(const CheckpointSettings& s) {
  ResumePoint point;
  switch (s.resume) {
    case CheckpointSettings::Resume::No: return std::nullopt;
    case CheckpointSettings::Resume::Path:
      if (!fs::is_directory(s.resume_path))
        throw ft::Error("resume_from_checkpoint: " + s.resume_path + " is not a directory");
      point.dir = s.resume_path;
      break;
    case CheckpointSettings::Resume::Newest: return newest_intact_checkpoint(s.dir);
  }
  point.manifest_path = manifest_path_in(point.dir);
  point.manifest = read_manifest(point.manifest_path);
  return point;
}

void adopt_checkpoint_settings(TrainingSettings& s, const ResumePoint& point) {
  const TrainingProgress& p = point.manifest.progress;
  const std::string& from = point.manifest_path;
  if (s.seed_drawn) {
    // The config leaves the seed unset: the run goes on with the seed it started with.
    s.seed = p.seed;
    s.seed_drawn = false;
  } else if (p.seed != s.seed) {
    ft::log::warn("resume: config seed {} differs from the checkpoint's {}; using the checkpoint's ({})", s.seed,
                  p.seed, from);
    s.seed = p.seed;
  }
  if (p.max_steps_per_epoch != s.max_steps_per_epoch) {
    auto text = [](const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : std::string("unset"); };
    ft::log::warn("resume: config max_steps_per_epoch {} differs from the checkpoint's {}; using the checkpoint's ({})",
                  text(s.max_steps_per_epoch), text(p.max_steps_per_epoch), from);
    s.max_steps_per_epoch = p.max_steps_per_epoch;
  }
  if (p.total_epochs != s.epochs)
    ft::log::warn("resume: config epochs {} differs from the checkpoint's total_epochs {}; using the config's",
                  s.epochs, p.total_epochs);
  if (p.batch_size != s.batch_size || p.gradient_accumulation_steps != s.gradient_accumulation_steps)
    throw ft::Error(from + ": saved with batch_size " + std::to_string(p.batch_size) +
                    " and gradient_accumulation_steps " + std::to_string(p.gradient_accumulation_steps) +
                    ", the config has " + std::to_string(s.batch_size) + " and " +
                    std::to_string(s.gradient_accumulation_steps) +
                    "; the saved data position only means the same micro-batches with the same values");
}

struct CheckpointManager::Snapshot {
  std::string tag;
  std::string staging;
  TrainingProgress progress;
  bool sharded = false;
  int rank = 0;
  int world_size = 1;
  std::vector<ft::NamedTensor> model;      // rank 0
  std::vector<ft::NamedTensor> optimizer;  // ranks that write optimizer state
  at::Tensor rng;                          // rank 0
  c10::ScalarType model_dtype = c10::ScalarType::Float;
  Clock::time_point started;
  bool background = false;  // written by a background thread
};

CheckpointManager::CheckpointManager(CheckpointSettings settings, std::shared_ptr<ft::Collectives> world, Parts parts,
                                     std::vector<ParameterShape> model_parameters)
    : s_(std::move(settings)),
      world_(std::move(world)),
      parts_(parts),
      storage_(&storage_of(*parts.checkpointer)),
      model_parameters_(std::move(model_parameters)) {
  // Every rank names the staging directory after rank 0's pid: unique per run, and a later
  // run's cleanup can tell the directories of an interrupted save by their pattern.
  at::Tensor id = at::full({1}, world_->rank() == 0 ? static_cast<std::int64_t>(::getpid()) : 0, at::kLong);
  world_->broadcast(id, 0);
  run_id_ = id.item<std::int64_t>();
  if (world_->rank() == 0) {
    const InterruptedCheckpoints leftovers = remove_interrupted_checkpoints(s_.dir);
    for (const std::string& path : leftovers.removed)
      ft::log::warn("checkpoint: removed {}, left by an interrupted save", path);
    for (const std::string& move : leftovers.restored)
      ft::log::warn("checkpoint: restored {}, a checkpoint an interrupted save had moved aside to replace it", move);
  }
  world_->barrier();
}

CheckpointManager::~CheckpointManager() {
  if (!background_.joinable()) return;
  background_.join();
  if (background_error_) ft::log::error("checkpoint: the background save of {} failed (see above)", background_tag_);
}

void CheckpointManager::save(const std::string& tag, const TrainingProgress& progress, Mode mode) {
  const auto entered = Clock::now();
  wait();
  const bool background = s_.async && mode == Mode::AsConfigured;
  const int rank = world_->rank();
  Snapshot snap;
  snap.started = Clock::now();
  snap.tag = tag;
  snap.staging = ft::staging_directory((fs::path(s_.dir) / tag).string(), run_id_);
  snap.progress = progress;
  snap.sharded = parts_.parallelism->shards_optimizer_state();
  snap.rank = rank;
  snap.world_size = world_->size();
  // The whole model: the strategy gathers its shards, then the tensor-parallel slices, then the
  // experts of the other expert-parallel ranks.
  parts_.parallelism->with_full_parameters(*parts_.model, [&] {
    auto copy = [&] {
      if (rank == 0) snap.model = cpu_copies(parts_.model->hf_parameters());
    };
    auto with_experts = [&] {
      if (auto* expert_parallelism = ft::role_of<ft::ModelExpertParallelism>(*parts_.model))
        expert_parallelism->with_full_expert_parallel_parameters(copy);
      else
        copy();
    };
    if (auto* tensor_parallelism = ft::role_of<ft::ModelTensorParallelism>(*parts_.model))
      tensor_parallelism->with_full_tensor_parallel_parameters(with_experts);
    else
      with_experts();
  });
  if (rank == 0 && !snap.model.empty()) snap.model_dtype = snap.model.front().tensor.scalar_type();
  if (snap.sharded || rank == 0) {
    // The live moments are only stable until the next step: a background save needs copies.
    snap.optimizer = parts_.optimizer->state();
    if (background) snap.optimizer = cpu_copies(snap.optimizer);
  }
  if (rank == 0) {
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    snap.rng = generator.get_state();
    fs::remove_all(snap.staging);
    fs::create_directories(fs::path(snap.staging) / kRecipeStateDir);
  }
  world_->barrier();  // the staging directory exists for every rank

  snap.background = background;
  if (!background) {
    with_host_errors([&] { write(snap); });
    world_->barrier();  // no rank trains on before the checkpoint is complete
    if (rank == 0) ft::log::info("checkpoint: {}: training blocked {:.2f} s", tag, seconds_since(entered));
    return;
  }
  if (rank == 0)
    ft::log::info(
        "checkpoint: {}: training blocked {:.2f} s (waiting for the previous save {:.2f} s, copying {:.2f} s); "
        "writing it in the background",
        tag, seconds_since(entered), std::chrono::duration<double>(snap.started - entered).count(),
        seconds_since(snap.started));
  background_tag_ = tag;
  background_error_ = nullptr;
  background_ = std::thread([this, snap = std::move(snap)] {
    try {
      with_host_errors([&] { write(snap); });
    } catch (const std::exception& e) {
      ft::log::error("checkpoint: background save of {} failed: {}", snap.tag, e.what());
      background_error_ = std::current_exception();
    }
  });
}

void CheckpointManager::wait() {
  if (!background_.joinable()) return;
  background_.join();
  if (!background_error_) return;
  std::exception_ptr error = std::exchange(background_error_, nullptr);
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    throw ft::Error("checkpoint " + background_tag_ + " could not be saved in the background: " + e.what());
  }
}

void CheckpointManager::write(const Snapshot& snap) {
  if (snap.sharded || snap.rank == 0)
    storage_->write_tensors((fs::path(snap.staging) / optimizer_file_name(snap.rank, snap.world_size)).string(),
                            snap.optimizer, {{"format", "pt"}});
  if (snap.rank == 0) {
    commit(snap);
  } else if (snap.sharded) {
    ft::write_text_file_atomically((fs::path(snap.staging) / marker_name(snap.rank)).string(), "");
  }
}

void CheckpointManager::commit(const Snapshot& snap) {
  const fs::path staging(snap.staging);
  storage_->write_model_files(snap.model, *parts_.model, snap.staging);
  storage_->write_tensors((staging / kRecipeStateDir / kRngFileName).string(), {{kRngTensorName, snap.rng}}, {});

  // All ranks agree the checkpoint is complete: each one's optimizer file is durable before
  // its marker appears.
  if (snap.sharded) {
    const auto deadline = Clock::now() + s_.timeout;
    for (int r = 1; r < snap.world_size; ++r) {
      const fs::path marker = staging / marker_name(r);
      while (!fs::exists(marker)) {
        if (Clock::now() > deadline)
          throw ft::Error("checkpoint " + snap.tag + ": rank " + std::to_string(r) + " did not finish writing " +
                          (staging / optimizer_file_name(r, snap.world_size)).string() +
                          " within distributed_timeout_s");
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      fs::remove(marker);
    }
  }

  RecipeStateManifest m;
  m.progress = snap.progress;
  m.optimizer_sharded = snap.sharded;
  for (int r = 0; r < (snap.sharded ? snap.world_size : 1); ++r)
    m.optimizer_files.push_back(optimizer_file_name(r, snap.world_size));
  m.rng_file = std::string(kRecipeStateDir) + "/" + kRngFileName;
  m.model_dtype = dtype_name(snap.model_dtype);
  m.model_parameters = model_parameters_;
  std::uint64_t bytes = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(staging)) {
    if (!e.is_regular_file()) continue;
    m.file_sizes[fs::relative(e.path(), staging).string()] = e.file_size();
    bytes += e.file_size();
  }
  ft::write_text_file_atomically(manifest_path_in(snap.staging), manifest_json(m));
  ft::fsync_path((staging / kRecipeStateDir).string());
  ft::fsync_path(staging.string());
  const std::string final_dir = (fs::path(s_.dir) / snap.tag).string();
  ft::install_directory(snap.staging, final_dir);
  ft::log::info("checkpoint: saved {} ({:.1f} MB, step {}) in {:.2f} s{}", final_dir, static_cast<double>(bytes) / 1e6,
                snap.progress.steps_run, seconds_since(snap.started), snap.background ? " (in the background)" : "");

  if (s_.keep_last_n > 0) {
    auto all = complete_checkpoints(s_.dir);
    all.erase(std::remove_if(all.begin(), all.end(), [&](const CheckpointEntry& e) { return e.tag == snap.tag; }),
              all.end());
    while (static_cast<std::int64_t>(all.size()) + 1 > s_.keep_last_n) {
      ft::delete_directory(all.front().dir);
      ft::log::info("checkpoint: deleted {} (keep_last_n = {})", all.front().dir, s_.keep_last_n);
      all.erase(all.begin());
    }
  }
}

void CheckpointManager::restore(const ResumePoint& point) {
  with_host_errors([&] { restore_state(point); });
}

void CheckpointManager::restore_state(const ResumePoint& point) {
  const RecipeStateManifest& m = point.manifest;
  const int rank = world_->rank();
  const bool sharded = parts_.parallelism->shards_optimizer_state();
  if (m.optimizer_sharded != sharded)
    throw ft::Error(point.manifest_path + ": the optimizer state was saved " +
                    (m.optimizer_sharded ? "sharded (one file per rank, FSDP)" : "whole (single device or DDP)") +
                    " but this run's parallelism strategy " + (sharded ? "shards it" : "keeps it whole") +
                    "; resume with the same strategy");
  const std::size_t index = sharded ? static_cast<std::size_t>(rank) : 0;
  if (index >= m.optimizer_files.size())
    throw ft::Error(point.manifest_path + ": key \"optimizer.files\" has no file for rank " + std::to_string(rank));
  const std::string optimizer_file = (fs::path(point.dir) / m.optimizer_files[index]).string();
  try {
    parts_.optimizer->load_state(storage_->read_tensors(optimizer_file));
  } catch (const ft::Error& e) {
    const std::string what = e.what();
    if (what.rfind(optimizer_file, 0) == 0) throw;
    throw ft::Error(optimizer_file + ": " + what);
  }

  const std::string rng_file = (fs::path(point.dir) / m.rng_file).string();
  at::Tensor rng;
  for (const ft::NamedTensor& t : storage_->read_tensors(rng_file))
    if (t.name == kRngTensorName) rng = t.tensor.clone();
  if (!rng.defined()) throw ft::Error(rng_file + ": no tensor \"" + std::string(kRngTensorName) + "\"");
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  try {
    generator.set_state(rng);
  } catch (const c10::Error& e) {
    throw ft::Error(rng_file + ": not a CPU generator state: " + e.what_without_backtrace());
  }
}

}  // namespace fthost
