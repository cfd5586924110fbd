#include "plan/step_estimate.h"

#include "config/byte_size.h"

#include <ATen/core/TensorAccessor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <c10/core/ScalarType.h>
#include <fmt/format.h>

#include <algorithm>

namespace fthost {

namespace {

// A ring collective moves (n - 1) / n of the data through each rank's link.
double ring_share(int ranks) { return ranks > 1 ? static_cast<double>(ranks - 1) / ranks : 0.0; }

// The training FLOPs of a micro-batch's images as the model counts them, from a batch of their
// shapes: the pixels and the mask on the meta device, the real tiles counted (the images' first).
double image_flops_per_micro_batch(const ModelOutline& model, const RunShape& run) {
  if (!model.image || !model.image_training_flops || run.images_per_sample == 0) return 0;
  const std::int64_t b = run.batch_size, n = run.images_per_sample, tiles = run.tiles_per_image;
  const std::int64_t size = model.image->image_size;
  const auto meta = at::TensorOptions().device(at::kMeta);
  ft::BatchImages images;
  images.images = at::empty({b, n, tiles, 3, size, size}, meta);
  images.aspect_ratio = at::empty({b, n, 2}, meta.dtype(at::kLong));
  images.tile_count = at::full({b, n}, tiles, at::kLong);
  if (run.real_tiles > 0) {
    std::int64_t left = run.real_tiles;
    auto count = images.tile_count.accessor<std::int64_t, 2>();
    for (std::int64_t i = 0; i < b * n; ++i) {
      count[i / n][i % n] = std::min(tiles, left);
      left -= count[i / n][i % n];
    }
  }
  const std::int64_t states = n * tiles * std::max<std::int64_t>(1, model.image->image_states);
  images.encoder_mask = at::empty({b, run.seq_len, states}, meta.dtype(at::kBool));
  return model.image_training_flops(images);
}

}  // namespace

StepEstimate estimate_step(const ModelOutline& model, const ParallelLayout& layout, const RunShape& run,
                           const StepAssumptions& a) {
  StepEstimate out;
  const double e = static_cast<double>(c10::elementSize(run.dtype));
  const double micro_batches = static_cast<double>(run.accumulation);
  const double tokens = static_cast<double>(run.batch_size * run.seq_len) / layout.context;  // per rank, micro-batch
  // Tensor-parallel ranks share their tokens' matmuls; context-parallel ranks split the tokens.
  out.flops_per_rank = model.training_flops_per_position * tokens * micro_batches / layout.tensor;
  // Every tensor-parallel rank encodes its batch's images whole (the plans split the decoder).
  out.image_flops_per_rank = image_flops_per_micro_batch(model, run) * micro_batches;
  out.flops_per_rank += out.image_flops_per_rank;
  out.compute_seconds = a.peak_flops > 0 ? out.flops_per_rank / (a.peak_flops * a.mfu) : 0;
  const double replicas = static_cast<double>(layout.data_parallel()) / layout.context;
  out.tokens_per_step = static_cast<double>(run.batch_size * run.seq_len) * micro_batches * replicas;

  double whole = 0;  // the parameters' bytes on this rank before data-parallel sharding
  for (const auto& layer : model.layers)
    for (const auto& p : layer.parameters) whole += static_cast<double>(p.numel) * e;
  for (const auto* part : {&model.embedding, &model.output, &model.other})
    for (const auto& p : *part) whole += static_cast<double>(p.numel) * e;

  // Each group's bytes, over the node's links when the group fits in a node (the mesh puts
  // tensor, context and expert groups on consecutive ranks), else between nodes.
  double seconds = 0;
  const auto send = [&](double bytes, int group_size) {
    out.communication_bytes += bytes;
    const bool crosses_nodes = layout.nodes > 1 && group_size > a.ranks_per_node;
    const double bandwidth = crosses_nodes ? a.inter_node_bandwidth : a.intra_node_bandwidth;
    if (bandwidth > 0) seconds += bytes / bandwidth;
  };
  if (layout.sharded) {
    const double gathers = layout.reshard_after_forward ? 2 : 1;  // forward, and again for backward
    send(micro_batches * (gathers + 1) * whole * ring_share(layout.shard), layout.shard);
    if (layout.replicate > 1)
      send(2 * whole / layout.shard * ring_share(layout.replicate), layout.shard * layout.replicate);
  } else if (layout.data_parallel() > 1) {
    send(2 * whole * ring_share(layout.data_parallel()), layout.data_parallel());
  }
  // The decoder's layers carry the split hidden state; an image encoder's are not split.
  double layers = 0;
  std::int64_t kv_width = 0;
  for (const auto& layer : model.layers)
    if (!layer.image_tokens) {
      layers += 1;
      if (kv_width == 0) kv_width = layer.kv_width;
    }
  const double d = static_cast<double>(model.embed_dim);
  if (layout.tensor > 1)  // two all-reduces of the hidden state per layer in forward, two in backward
    send(micro_batches * layers * 4 * 2 * tokens * d * e * ring_share(layout.tensor), layout.tensor);
  if (layout.context > 1 && layers > 0) {  // keys and values in, their gradients back
    const double kv = static_cast<double>(kv_width);
    send(micro_batches * layers * 2 * (layout.context - 1) * tokens * 2 * kv * e, layout.context);
  }
  if (layout.expert > 1)
    for (const auto& layer : model.layers)
      if (layer.experts > 0)  // rows out to their experts and back, in forward and in backward
        send(micro_batches * 4 * tokens * static_cast<double>(layer.top_k) * d * e * ring_share(layout.expert),
             layout.expert);
  out.communication_seconds = seconds;
  out.overlapped = layout.sharded && layout.prefetch;
  out.step_seconds = out.overlapped ? std::max(out.compute_seconds, out.communication_seconds)
                                    : out.compute_seconds + out.communication_seconds;
  if (out.step_seconds > 0) out.tokens_per_second = out.tokens_per_step / out.step_seconds;

  out.assumptions.push_back(
      fmt::format("compute at {:.0f}% of {:.1f} TFLOP/s ({})", a.mfu * 100, a.peak_flops / 1e12, a.peak_source));
  if (a.intra_node_bandwidth > 0)
    out.assumptions.push_back(
        fmt::format("{} per direction within a node{}", format_rate(a.intra_node_bandwidth),
                    layout.nodes > 1 ? fmt::format(", {}/s between nodes", format_bytes(a.inter_node_bandwidth)) : ""));
  else if (out.communication_bytes > 0)
    out.assumptions.push_back("communication time not estimated (no link bandwidth for this device)");
  if (out.image_flops_per_rank > 0)
    out.assumptions.push_back(fmt::format("{:.1f} TFLOP of it a step encoding the images, as the model counts them",
                                          out.image_flops_per_rank / 1e12));
  out.assumptions.push_back(out.overlapped ? "FSDP prefetch overlaps communication with compute"
                                           : "communication not overlapped with compute");
  return out;
}

}  // namespace fthost
