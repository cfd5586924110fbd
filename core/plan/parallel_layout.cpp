#include "plan/parallel_layout.h"

#include "config/mesh_dimensions.h"

#include <string>
#include <vector>

namespace fthost {

ParallelLayout read_parallel_layout(const ft::ConfigNode& root, const TrainingSettings& settings, int world,
                                    int nodes) {
  ParallelLayout layout;
  layout.world = world;
  layout.nodes = nodes;
  layout.tensor = settings.tensor_parallel_dim;
  layout.context = settings.context_parallel_dim;
  layout.expert = settings.expert_parallel_dim;
  check_mesh_dimensions(root, world, layout.tensor, layout.expert, layout.context);
  const int data_parallel = world / layout.tensor;

  const ft::ConfigNode parallelism = root.table("parallelism");
  layout.strategy = parallelism.component();
  if (layout.strategy == "fthost.parallelism.single") {
    if (world != 1)
      parallelism.fail("_component_", "fthost.parallelism.single trains one rank; the plan is for " +
                                          std::to_string(world) + " ranks");
    return layout;
  }
  if (layout.strategy == "fthost.parallelism.ddp") return layout;
  if (layout.strategy != "fthost.parallelism.fsdp" && layout.strategy != "fthost.parallelism.hsdp")
    parallelism.fail("_component_", layout.strategy +
                                        ": the plan knows how fthost.parallelism.single, ddp, fsdp and hsdp hold "
                                        "parameters, not this strategy");
  const bool hybrid = layout.strategy == "fthost.parallelism.hsdp";
  layout.sharded = true;
  layout.replicate = static_cast<int>(parallelism.get<std::int64_t>("data_parallel_replicate_dim", hybrid ? 2 : 1));
  const auto shard = parallelism.get<std::int64_t>("data_parallel_shard_dim", -1);
  if (layout.replicate < 1) parallelism.fail("data_parallel_replicate_dim", "expected an integer >= 1");
  if (data_parallel % layout.replicate != 0)
    parallelism.fail("data_parallel_replicate_dim", std::to_string(layout.replicate) + " does not divide the " +
                                                        std::to_string(data_parallel) + " data-parallel ranks");
  if (shard != -1 && shard < 1) parallelism.fail("data_parallel_shard_dim", "expected -1 or an integer >= 1");
  layout.shard = shard == -1 ? data_parallel / layout.replicate : static_cast<int>(shard) * layout.context;
  if (layout.shard * layout.replicate != data_parallel)
    parallelism.fail("data_parallel_shard_dim",
                     "replicate (" + std::to_string(layout.replicate) + ") x shard (" + std::to_string(shard) +
                         (layout.context > 1 ? ") x context_parallel_dim (" + std::to_string(layout.context) : "") +
                         (layout.tensor > 1 ? ") x tensor_parallel_dim (" + std::to_string(layout.tensor) : "") +
                         ") must equal the " + std::to_string(world) + " ranks of this run");
  layout.reshard_after_forward = parallelism.get<bool>("reshard_after_forward", true);
  layout.cpu_offload = parallelism.get<bool>("cpu_offload", false);
  layout.prefetch = parallelism.get<bool>("prefetch", !settings.device.is_cpu());
  // A fusion model's (Llama 3.2 Vision's) names are its decoder's.
  for (const auto& name : parallelism.get<std::vector<std::string>>("custom_sharded_layers", {})) {
    if (name == "tok_embeddings" || name == "decoder.tok_embeddings") layout.separate_embedding = true;
    if (name == "output" || name == "decoder.output") layout.separate_output = true;
  }
  return layout;
}

}  // namespace fthost
