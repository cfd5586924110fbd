#include "plan/run_plan.h"

#include "config/checked_config.h"
#include "plan/device_peak_flops.h"

#include <ft/loss.h>
#include <ft/model.h>

#include <fmt/format.h>

#include <unistd.h>

#include <fstream>
#include <optional>
#include <string>

namespace fthost {

namespace {

// The CUDA context, cuBLAS' and cuDNN's workspaces: outside the caching allocator's counts.
constexpr double kCudaContextBytes = 0.5 * 1024 * 1024 * 1024;

std::vector<bool> checkpointed_layers(const TrainingSettings& settings, std::int64_t layers) {
  return settings.activation_checkpointing.layers(layers);
}

// The tokenizer's max_seq_len, where the config sets one.
std::optional<std::int64_t> tokenizer_max_seq_len(const ft::ConfigNode& root) {
  if (!root.is_table("tokenizer")) return std::nullopt;
  const auto n = root.table("tokenizer").get<std::int64_t>("max_seq_len", 0);
  return n > 0 ? std::optional<std::int64_t>(n) : std::nullopt;
}

// The tiles of each image: given, else the tokenizer's max_num_tiles, else the most the model
// takes. A tokenizer whose tiles the model cannot take fails as the run would.
std::int64_t planned_tiles(const ft::ConfigNode& root, const ft::ImageTiles& image, std::int64_t given,
                           std::string& source) {
  std::int64_t from_tokenizer = 0;
  if (root.is_table("tokenizer")) {
    const ft::ConfigNode tokenizer = root.table("tokenizer");
    const auto size = tokenizer.get<std::int64_t>("image_size", image.image_size);
    if (size != image.image_size)
      tokenizer.fail("image_size", "the model's tiles are " + std::to_string(image.image_size) + " pixels, got " +
                                       std::to_string(size) + " (the model's image_size must match)");
    from_tokenizer = tokenizer.get<std::int64_t>("max_num_tiles", 0);
    if (from_tokenizer > 0 && image.max_num_tiles > 0 && from_tokenizer > image.max_num_tiles)
      tokenizer.fail("max_num_tiles", "the model takes at most " + std::to_string(image.max_num_tiles) +
                                          " tiles an image, got " + std::to_string(from_tokenizer));
  }
  const std::int64_t tiles = given > 0 ? given : from_tokenizer > 0 ? from_tokenizer : image.max_num_tiles;
  source = given > 0            ? "--tiles-per-image"
           : from_tokenizer > 0 ? "tokenizer.max_num_tiles"
                                : "the most the model takes; the tokenizer sets no max_num_tiles";
  if (tiles <= 0)
    throw ft::ConfigError(
        "fthost plan: neither the tokenizer (max_num_tiles) nor the model bounds an image's tiles; "
        "give --tiles-per-image");
  if (image.max_num_tiles > 0 && tiles > image.max_num_tiles)
    throw ft::ConfigError("--tiles-per-image " + std::to_string(tiles) + ": the model takes at most " +
                          std::to_string(image.max_num_tiles) + " tiles an image");
  return tiles;
}

double physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
}

}  // namespace

double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

RunPlan plan_run(const ft::Registry& registry, const ft::ConfigNode& root, const TrainingSettings& settings, int world,
                 int nodes, std::int64_t batch_size, std::int64_t seq_len, double runtime, bool on_gpu,
                 const PlannedImages& images) {
  RunPlan plan;
  plan.layout = read_parallel_layout(root, settings, world, nodes);
  OutlineRequest request;
  request.dtype = settings.dtype;
  request.tensor_parallel = plan.layout.tensor;
  request.expert_parallel = plan.layout.expert;
  request.seq_len = seq_len;
  plan.model = outline_model(registry, root, request);
  plan.optimizer = optimizer_state_size(root.table("optimizer"));
  RunShape& run = plan.run;
  run.batch_size = batch_size;
  run.seq_len = seq_len;
  run.accumulation = settings.gradient_accumulation_steps;
  run.dtype = settings.dtype;
  run.on_gpu = on_gpu;
  run.checkpointed = checkpointed_layers(settings, plan.model.checkpointable_layers);
  if (plan.model.image && images.per_sample > 0) {
    run.images_per_sample = images.per_sample;
    run.tiles_per_image = planned_tiles(root, *plan.model.image, images.tiles, plan.tiles_source);
    run.real_tiles = images.real_tiles;
  }
  run.offload_activations = settings.activation_checkpointing.offload;
  run.optimizer_in_backward = settings.optimizer_in_bwd;
  const auto loss = registry.instantiate<ft::Loss>(root.table("loss"));
  const ft::OutputRequest output = loss->output_request();
  run.loss_projects_hidden = output.hidden_only;
  run.loss_chunks = output.num_output_chunks;
  plan.memory = plan_memory(plan.model, plan.layout, run, plan.optimizer, runtime);
  const double element = static_cast<double>(c10::elementSize(settings.dtype));
  plan.checkpoint_bytes = static_cast<double>(plan.model.parameters_total) * element +
                          plan.optimizer.bytes(plan.model.parameters_total, static_cast<int>(element));
  return plan;
}

RunPlan plan_invocation(const Invocation& inv, bool with_step) {
  const PlanOptions& where = inv.plan;
  const int world = where.nproc_per_node * where.nnodes;
  // A GPU run planned by a build without CUDA: loaded as a CPU run, planned as the GPU's.
  bool on_gpu = !where.device.empty();
  const auto plan_cuda_on_this_build = [&on_gpu](ft::detail::ConfigDocument& doc) {
    const toml::node* device = doc.find("device");
    const std::optional<std::string> name = device ? device->value<std::string>() : std::nullopt;
    if (!name || name->rfind("cuda", 0) != 0) return;
    on_gpu = true;
    if (!FT_WITH_CUDA) doc.root().insert_or_assign("device", "cpu");
  };
  const CheckedConfig checked =
      load_checked_config_for_world(inv, PluginLoader(PluginLoader::Manifests::Ignore), world, plan_cuda_on_this_build);
  const TrainingSettings& settings = checked.settings;
  const double runtime = on_gpu ? kCudaContextBytes : resident_bytes();

  // The sequence length: --seq-len, else the longest the config admits: the tokenizer's
  // max_seq_len, else the model's (read from the model itself, built on the meta device).
  std::int64_t seq_len = where.seq_len.value_or(0);
  std::string seq_source = where.seq_len_source;
  if (seq_len == 0) {
    if (const auto tokenizer = tokenizer_max_seq_len(checked.root)) {
      seq_len = *tokenizer;
      seq_source = "tokenizer.max_seq_len";
    } else {
      seq_len = checked.plugins.registry()
                    .instantiate<ft::Model>(checked.root.table("model"),
                                            {settings.dtype, c10::Device(c10::DeviceType::Meta), 0})
                    ->max_seq_len();
      seq_source = "the model's max_seq_len: the tokenizer sets none";
      if (seq_len <= 0)
        throw ft::ConfigError("fthost plan: neither the tokenizer nor the model sets a max_seq_len; give --seq-len");
    }
  }
  const PlannedImages images{where.images_per_sample.value_or(1), where.tiles_per_image.value_or(0)};
  RunPlan plan = plan_run(checked.plugins.registry(), checked.root, settings, world, where.nnodes, settings.batch_size,
                          seq_len, runtime, on_gpu, images);
  plan.seq_len_source = seq_source;
  if (!plan.model.image && (where.images_per_sample || where.tiles_per_image))
    throw ft::ConfigError(std::string(where.images_per_sample ? "--images-per-sample" : "--tiles-per-image") + ": " +
                          plan.model.component + " reads no images");
  plan.images_source = where.images_per_sample
                           ? "--images-per-sample"
                           : "assumed: the config does not say how many a sample has; --images-per-sample N";
  plan.has_tensor_parallel_plan = checked.root.is_table("tensor_parallel_plan");

  StepAssumptions step;
  step.mfu = where.mfu;
  step.ranks_per_node = where.nproc_per_node;
  step.inter_node_bandwidth = where.inter_node_bandwidth;
  if (!where.device.empty()) {
    const DeviceDatasheet sheet = find_device_datasheet(where.device);
    plan.device = sheet.model;
    plan.device_memory = sheet.memory_bytes;
    const bool tensor_cores = settings.dtype == c10::kBFloat16 || settings.dtype == c10::kHalf;
    step.peak_flops = tensor_cores ? sheet.tensor_core_flops : sheet.fp32_flops;
    step.peak_source = fmt::format("{} datasheet, {} dense", sheet.model, dtype_name(settings.dtype));
    step.intra_node_bandwidth = sheet.link_bytes_per_second;
  } else if (!on_gpu) {
    plan.device = where.nproc_per_node > 1
                      ? fmt::format("this machine's CPU ({} ranks share its memory)", where.nproc_per_node)
                      : std::string("this machine's CPU");
    const double memory = physical_memory_bytes();
    if (memory > 0) plan.device_memory = memory / where.nproc_per_node;
    if (with_step) {
      step.peak_flops = measure_gemm_peak(c10::Device(c10::DeviceType::CPU), settings.dtype);
      step.peak_source = fmt::format("measured here: a dense {} matmul", dtype_name(settings.dtype));
    }
  } else {
    plan.device = "a GPU (give --device NAME for its memory and peak)";
  }
  if (where.device_memory) plan.device_memory = where.device_memory;
  if (with_step) plan.step = estimate_step(plan.model, plan.layout, plan.run, step);
  plan.checkpoint_seconds = plan.checkpoint_bytes / where.write_bandwidth;
  return plan;
}

}  // namespace fthost
