#include "training_settings.h"

#include "device_support.h"

#include <ft/errors.h>
#include <ft/log.h>

#include <cmath>
#include <limits>

namespace fthost {

namespace {

std::optional<double> read_clip_grad_norm(const ft::ConfigNode& root) {
  if (!root.has("clip_grad_norm")) return std::nullopt;
  // torchtune configs write `clip_grad_norm: null` (absent in TOML), a number, or the string "inf".
  std::optional<double> value;
  try {
    value = root.get_optional<double>("clip_grad_norm");
  } catch (const ft::ConfigError&) {
  }
  if (!value) {
    std::optional<std::string> text;
    try {
      text = root.get_optional<std::string>("clip_grad_norm");
    } catch (const ft::ConfigError&) {
    }
    if (text && *text == "inf") return std::numeric_limits<double>::infinity();
    root.fail("clip_grad_norm",
              "expected a positive number or \"inf\"" + (text ? ", got \"" + *text + "\"" : std::string()));
  }
  if (!(*value > 0))
    root.fail("clip_grad_norm", "expected a positive number or \"inf\", got " + std::to_string(*value));
  return value;
}

c10::ScalarType read_dtype(const ft::ConfigNode& root) {
  const std::string name = root.get<std::string>("dtype");
  if (name == "fp32") return c10::ScalarType::Float;
  if (name == "bf16") return c10::ScalarType::BFloat16;
  if (name == "fp16")
    root.fail("dtype", "full fp16 training is not supported with this recipe. Please use bf16 or fp32 instead.");
  root.fail("dtype", "expected \"fp32\" or \"bf16\", got \"" + name + "\"");
}

std::int64_t positive(const ft::ConfigNode& root, const char* key) {
  const auto value = root.get<std::int64_t>(key);
  if (value < 1) root.fail(key, "expected an integer >= 1, got " + std::to_string(value));
  return value;
}

void refuse_unimplemented(const ft::ConfigNode& root, const TrainingSettings& s) {
  if (root.get<bool>("optimizer_in_bwd", false)) {
    // The seed's incompatibilities first, with its wording, then our own limit.
    if (s.clip_grad_norm)
      root.fail("optimizer_in_bwd",
                "Gradient clipping is not supported with optimizer in bwd. "
                "Please set clip_grad_norm=None, or optimizer_in_bwd=False.");
    if (s.gradient_accumulation_steps > 1)
      root.fail("optimizer_in_bwd",
                "Gradient accumulation is not supported with optimizer in bwd. "
                "Please set gradient_accumulation_steps=1, or optimizer_in_bwd=False.");
    root.fail("optimizer_in_bwd", "the optimizer step fused into backward is not implemented yet; set it to false");
  }
  const bool checkpointing = root.get<bool>("enable_activation_checkpointing", false);
  if (root.get<bool>("enable_activation_offloading", false)) {
    if (!s.device.is_cuda())
      root.fail("enable_activation_offloading",
                "enable_activation_offloading should only be True when training on CUDA");
    if (!checkpointing)
      root.fail("enable_activation_offloading",
                "enable_activation_offloading should only be True when enable_activation_checkpointing is True");
    root.fail("enable_activation_offloading", "activation offloading is not implemented yet; set it to false");
  }
  if (checkpointing)
    root.fail("enable_activation_checkpointing", "activation checkpointing is not implemented yet; set it to false");
  if (root.get<bool>("compile", false))
    ft::log::warn("compile = true: fthost runs LibTorch eagerly; the key is accepted and has no effect");
  if (root.get<bool>("fsdp_cpu_offload", false) || root.has("custom_sharded_layers"))
    ft::log::warn("fsdp_cpu_offload / custom_sharded_layers apply to sharded training; a single rank ignores them");
}

}  // namespace

TrainingSettings read_training_settings(const ft::ConfigNode& root) {
  TrainingSettings s;
  s.output_dir = root.get<std::string>("output_dir");
  const auto seed = root.get<std::int64_t>("seed");
  if (seed < 0) root.fail("seed", "expected an integer >= 0, got " + std::to_string(seed));
  s.seed = static_cast<std::uint64_t>(seed);
  s.epochs = positive(root, "epochs");
  if (root.has("max_steps_per_epoch")) s.max_steps_per_epoch = positive(root, "max_steps_per_epoch");
  s.batch_size = positive(root, "batch_size");
  s.gradient_accumulation_steps = positive(root, "gradient_accumulation_steps");
  s.clip_grad_norm = read_clip_grad_norm(root);
  s.shuffle = root.get<bool>("shuffle");
  s.device = resolve_device(root);
  s.dtype = read_dtype(root);
  s.log_every_n_steps = positive(root, "log_every_n_steps");
  s.log_peak_memory_stats = root.get<bool>("log_peak_memory_stats");
  s.num_threads = root.get<int>("num_threads");
  if (s.num_threads < 0) root.fail("num_threads", "expected an integer >= 0 (0: all cores)");
  refuse_unimplemented(root, s);
  return s;
}

}  // namespace fthost
