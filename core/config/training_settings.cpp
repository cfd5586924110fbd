#include "config/training_settings.h"

#include "config/dtype_setting.h"

#include <ft/errors.h>
#include <ft/log.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <random>

namespace fthost {

namespace {

// The value of a key that may have one of several types, when it has type T; nullopt otherwise.
template <class T>
std::optional<T> optional_as(const ft::ConfigNode& root, const char* key) {
  try {
    return root.get_optional<T>(key);
  } catch (const ft::ConfigError&) {
    return std::nullopt;
  }
}

std::optional<double> read_clip_grad_norm(const ft::ConfigNode& root) {
  if (!root.has("clip_grad_norm")) return std::nullopt;
  // torchtune configs write `clip_grad_norm: null` (absent in TOML), a number, or the string "inf".
  const std::optional<double> value = optional_as<double>(root, "clip_grad_norm");
  if (!value) {
    const std::optional<std::string> text = optional_as<std::string>(root, "clip_grad_norm");
    if (text && *text == "inf") return std::numeric_limits<double>::infinity();
    root.fail("clip_grad_norm",
              "expected a positive number or \"inf\"" + (text ? ", got \"" + *text + "\"" : std::string()));
  }
  if (!(*value > 0))
    root.fail("clip_grad_norm", "expected a positive number or \"inf\", got " + std::to_string(*value));
  return value;
}

// torchtune's recipe refuses fp16 in its own words; other dtypes read as everywhere else.
c10::ScalarType read_training_dtype(const ft::ConfigNode& root) {
  if (root.get<std::string>("dtype") == "fp16")
    root.fail("dtype", "full fp16 training is not supported with this recipe. Please use bf16 or fp32 instead.");
  return read_dtype(root);
}

std::int64_t positive(const ft::ConfigNode& root, const char* key) {
  const auto value = root.get<std::int64_t>(key);
  if (value < 1) root.fail(key, "expected an integer >= 1, got " + std::to_string(value));
  return value;
}

// Options each valid on its own that do not fit together, refused in torchtune's words; a
// combination that works but leaves memory unsaved gets torchtune's hint instead.
void refuse_incompatible_options(const ft::ConfigNode& root, const TrainingSettings& s) {
  if (s.optimizer_in_bwd) {
    // The seed's incompatibilities, with its wording.
    if (s.clip_grad_norm)
      root.fail("optimizer_in_bwd",
                "Gradient clipping is not supported with optimizer in bwd. "
                "Please set clip_grad_norm=None, or optimizer_in_bwd=False.");
    if (s.gradient_accumulation_steps > 1)
      root.fail("optimizer_in_bwd",
                "Gradient accumulation is not supported with optimizer in bwd. "
                "Please set gradient_accumulation_steps=1, or optimizer_in_bwd=False.");
  }
  const bool checkpointing = root.get<bool>("enable_activation_checkpointing", false);
  if (s.activation_checkpointing.offload) {
    if (!s.device.is_cuda())
      root.fail("enable_activation_offloading",
                "enable_activation_offloading should only be True when training on CUDA");
    if (!checkpointing)
      root.fail("enable_activation_offloading",
                "enable_activation_offloading should only be True when enable_activation_checkpointing is True");
  } else if (checkpointing && s.device.is_cuda()) {
    ft::log::info(
        "Hint: enable_activation_checkpointing is True, but enable_activation_offloading isn't. "
        "Enabling activation offloading should reduce memory further.");
  }
}

// The seed's rule: a degree above 1 needs a plan. The degree's fit to the world size is checked
// with the process groups (device_mesh.cpp).
int read_tensor_parallel_dim(const ft::ConfigNode& root) {
  const auto tp = root.get<std::int64_t>("tensor_parallel_dim");
  if (tp < 1 || tp > 65536) root.fail("tensor_parallel_dim", "expected an integer >= 1, got " + std::to_string(tp));
  if (tp > 1 && !root.is_table("tensor_parallel_plan"))
    root.fail("tensor_parallel_dim",
              "Tensor Parallel plan needs to be provided when tensor parallel is enabled: add a "
              "[tensor_parallel_plan] table, e.g. _component_ = \"torchtune.models.llama3.base_llama_tp_plan\"");
  return static_cast<int>(tp);
}

// Its fit to the data-parallel ranks and to the model's experts is checked with the process
// groups and the model (device_mesh.cpp, the recipe).
int read_expert_parallel_dim(const ft::ConfigNode& root) {
  const auto ep = root.get<std::int64_t>("expert_parallel_dim");
  if (ep < 1 || ep > 65536) root.fail("expert_parallel_dim", "expected an integer >= 1, got " + std::to_string(ep));
  return static_cast<int>(ep);
}

// Its fit to the ranks and to the model is checked with the process groups and the model.
int read_context_parallel_dim(const ft::ConfigNode& root) {
  const auto cp = root.get<std::int64_t>("context_parallel_dim");
  if (cp < 1 || cp > 65536) root.fail("context_parallel_dim", "expected an integer >= 1, got " + std::to_string(cp));
  return static_cast<int>(cp);
}

std::string read_rotate_method(const ft::ConfigNode& root) {
  auto method = root.get<std::string>("context_parallel_rotate_method");
  if (method != "allgather" && method != "alltoall")
    root.fail("context_parallel_rotate_method", "expected \"allgather\" or \"alltoall\", got \"" + method + "\"");
  return method;
}

// ac_option: an integer k, or (as torchtune's int() reads it) a string holding one.
std::int64_t read_every_x_layer(const ft::ConfigNode& root) {
  if (!root.has("ac_option"))
    root.fail("ac_option",
              "ac_mode = \"selective\" needs ac_option: an integer k >= 0 (checkpoint every k-th layer; 0: every "
              "layer)");
  if (const auto k = optional_as<std::int64_t>(root, "ac_option")) return *k;
  const std::optional<std::string> text = optional_as<std::string>(root, "ac_option");
  if (text && *text == "op")
    root.fail("ac_option",
              "\"op\" (op-level selective activation checkpointing) needs PyTorch's selective checkpoint "
              "policies, which LibTorch does not have; use an integer k to checkpoint every k-th layer");
  if (text) {
    std::size_t used = 0;
    try {
      const std::int64_t k = std::stoll(*text, &used);
      if (used == text->size()) return k;
    } catch (const std::exception&) {
    }
  }
  root.fail("ac_option", "expected an integer k >= 0 (checkpoint every k-th layer; 0: every layer)" +
                             (text ? ", got \"" + *text + "\"" : std::string()));
}

// torchtune's two spellings: the older enable_activation_checkpointing (every layer), and
// ac_mode / ac_option, read only when enable_activation_checkpointing is false.
ActivationCheckpointingSettings read_activation_checkpointing(const ft::ConfigNode& root) {
  const bool enabled = root.get<bool>("enable_activation_checkpointing", false);
  const auto mode = root.get_optional<std::string>("ac_mode");
  if (enabled && mode)
    root.fail("ac_mode", "enable_activation_checkpointing = true and ac_mode = \"" + *mode +
                             "\" are both set, and torchtune's recipe then checkpoints no layer at all; set "
                             "enable_activation_checkpointing = true alone (every layer), or set it to false and "
                             "choose the layers with ac_mode");
  if ((!mode || *mode != "selective") && root.has("ac_option"))
    ft::log::warn("ac_option is read only with ac_mode = \"selective\"; it has no effect");
  if (enabled) return {1, "enable_activation_checkpointing"};
  if (!mode || *mode == "none") return {0, "ac_mode"};
  if (*mode == "full") return {1, "ac_mode"};
  if (*mode != "selective")
    root.fail("ac_mode",
              "expected \"full\" (every layer), \"selective\" (the layers ac_option chooses) or "
              "\"none\", got \"" +
                  *mode + "\"");
  const std::int64_t k = read_every_x_layer(root);
  if (k < 0)
    root.fail("ac_option",
              "Selective layer AC policy (every_x_layer) expects a positive integer, received " + std::to_string(k));
  return {k == 0 ? 1 : k, "ac_option"};
}

CheckpointSettings read_checkpoint_settings(const ft::ConfigNode& root, const TrainingSettings& s) {
  CheckpointSettings c;
  c.dir = s.output_dir;
  if (root.is_table("checkpointer")) {
    const ft::ConfigNode checkpointer = root.table("checkpointer");
    const auto own = checkpointer.get_optional<std::string>("output_dir");
    if (own && !own->empty()) c.dir = *own;
    // torchtune's configs also carry the key in the checkpointer table.
    if (checkpointer.get<bool>("resume_from_checkpoint", false)) c.resume = CheckpointSettings::Resume::Newest;
  }
  c.save_every_n_steps = root.get<std::int64_t>("save_every_n_steps");
  if (c.save_every_n_steps < 0)
    root.fail("save_every_n_steps", "expected an integer >= 0 (0: save at the end of each epoch only)");
  c.keep_last_n = root.get<std::int64_t>("keep_last_n");
  if (c.keep_last_n < 0) root.fail("keep_last_n", "expected an integer >= 0 (0: keep every checkpoint)");
  if (root.has("resume_from_checkpoint")) {
    const auto flag = optional_as<bool>(root, "resume_from_checkpoint");
    if (flag) {
      if (*flag) c.resume = CheckpointSettings::Resume::Newest;
    } else {
      const auto path = optional_as<std::string>(root, "resume_from_checkpoint");
      if (!path || path->empty())
        root.fail("resume_from_checkpoint", "expected true, false or the path of a checkpoint directory");
      c.resume = CheckpointSettings::Resume::Path;
      c.resume_path = *path;
    }
  }
  c.async = root.get<bool>("enable_async_checkpointing");
  c.timeout = s.distributed_timeout;
  return c;
}

}  // namespace

c10::Device read_device(const ft::ConfigNode& root) {
  const std::string name = root.get<std::string>("device");
  const auto fail = [&] { root.fail("device", "expected \"cpu\", \"cuda\" or \"cuda:N\", got \"" + name + "\""); };
  const std::size_t colon = name.find(':');
  const std::string type = name.substr(0, colon);
  if (type != "cpu" && type != "cuda") fail();
  c10::DeviceIndex index = -1;
  if (colon != std::string::npos) {
    const std::string digits = name.substr(colon + 1);
    if (digits.empty() || digits.size() > 3 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        (digits.size() > 1 && digits[0] == '0') || std::stoi(digits) > std::numeric_limits<c10::DeviceIndex>::max())
      fail();
    index = static_cast<c10::DeviceIndex>(std::stoi(digits));
  }
  const c10::Device device(type == "cpu" ? c10::DeviceType::CPU : c10::DeviceType::CUDA, index);
  if (device.is_cuda() && !FT_WITH_CUDA)
    root.fail("device", "this fthost was built without CUDA; use device = \"cpu\" or a CUDA build");
  return device;
}

std::vector<bool> ActivationCheckpointingSettings::layers(std::int64_t num_layers) const {
  std::vector<bool> checkpointed(static_cast<std::size_t>(std::max<std::int64_t>(num_layers, 0)), false);
  if (every_nth_layer < 1) return checkpointed;
  // torchtune counts wrapped layers from 1 and checkpoints those where count % k == 0.
  for (std::int64_t i = 0; i < num_layers; ++i)
    checkpointed[static_cast<std::size_t>(i)] = (i + 1) % every_nth_layer == 0;
  return checkpointed;
}

TrainingSettings read_training_settings(const ft::ConfigNode& root) {
  TrainingSettings s;
  s.output_dir = root.get<std::string>("output_dir");
  if (root.has("seed")) {
    const auto seed = root.get<std::int64_t>("seed");
    if (seed < 0) root.fail("seed", "expected an integer >= 0, got " + std::to_string(seed));
    s.seed = static_cast<std::uint64_t>(seed);
  } else {
    // torchtune's set_seed(None) draws from the uint32 range.
    std::random_device entropy;
    s.seed = std::uniform_int_distribution<std::uint32_t>()(entropy);
    s.seed_drawn = true;
  }
  s.epochs = positive(root, "epochs");
  if (root.has("max_steps_per_epoch")) s.max_steps_per_epoch = positive(root, "max_steps_per_epoch");
  s.batch_size = positive(root, "batch_size");
  s.gradient_accumulation_steps = positive(root, "gradient_accumulation_steps");
  s.clip_grad_norm = read_clip_grad_norm(root);
  s.shuffle = root.get<bool>("shuffle");
  s.device = read_device(root);
  s.dtype = read_training_dtype(root);
  s.log_every_n_steps = positive(root, "log_every_n_steps");
  s.log_peak_memory_stats = root.get<bool>("log_peak_memory_stats");
  s.num_threads = root.get<int>("num_threads");
  if (s.num_threads < 0) root.fail("num_threads", "expected an integer >= 0 (0: all cores)");
  s.num_workers = root.get<int>("num_workers");
  if (s.num_workers < 0 || s.num_workers > 64)
    root.fail("num_workers", "expected 0 (the step makes its own batches) to 64 background threads");
  const double timeout_s = root.get<double>("distributed_timeout_s");
  if (!(timeout_s > 0)) root.fail("distributed_timeout_s", "expected a positive number of seconds");
  s.distributed_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(timeout_s * 1000));
  s.checkpoint = read_checkpoint_settings(root, s);
  s.optimizer_in_bwd = root.get<bool>("optimizer_in_bwd", false);
  s.activation_checkpointing = read_activation_checkpointing(root);
  s.activation_checkpointing.offload = root.get<bool>("enable_activation_offloading", false);
  s.tensor_parallel_dim = read_tensor_parallel_dim(root);
  s.expert_parallel_dim = read_expert_parallel_dim(root);
  s.context_parallel_dim = read_context_parallel_dim(root);
  s.context_parallel_rotate_method = read_rotate_method(root);
  s.validation = read_validation_settings(root, s.batch_size);
  s.preemption = read_preemption_settings(root);
  refuse_incompatible_options(root, s);
  if (root.get<bool>("compile", false))
    ft::log::warn("compile = true: fthost runs LibTorch eagerly; the key is accepted and has no effect");
  return s;
}

}  // namespace fthost
