// What a run's model is made of, per rank, without building it: the decoder composed on the meta
// device (shapes only, no memory), split as the run would split it (tensor and expert
// parallelism through the model's own roles, over a stand-in group that never communicates), then
// read layer by layer. The memory plan (plan/memory_plan.h) counts bytes from it.
#pragma once

#include <ft/collate.h>
#include <ft/config.h>
#include <ft/model_layer_outline.h>
#include <ft/registry.h>

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fthost {

// One parameter as this rank holds it after tensor and expert parallelism (before any data-
// parallel sharding, which the memory plan applies).
struct PlannedParameter {
  std::string name;  // its module's path and place among the module's parameters
  std::int64_t numel = 0;
  std::int64_t dim0 = 0;  // what FSDP splits (padded to a multiple of its ranks)
  // One of a mixture of experts' expert weights: under expert parallelism FSDP shards it only
  // over the ranks holding the same experts (shard ranks / expert_parallel_dim).
  bool expert = false;
  // Frozen (requires_grad false, e.g. a vision encoder under encoder_trainable false): no
  // gradient and no optimizer state.
  bool trainable = true;
};

// One transformer layer's widths on this rank, what its saved activations scale with.
struct LayerOutline {
  std::string label;  // "layer 3" of a decoder; its sharding unit's name otherwise
  std::vector<PlannedParameter> parameters;
  // Over every image tile's encoder tokens (an image encoder's layer), not the text positions.
  bool image_tokens = false;
  // A fusion layer: queries from the text, keys and values over the image states.
  bool cross_attention = false;
  std::int64_t checkpoint_index = -1;  // among the layers activation checkpointing numbers; -1: never
  bool trainable = true;               // some parameter trains: its weights' inputs are kept too
  std::int64_t embed_dim = 0;
  std::int64_t heads = 0;        // this rank's query heads
  std::int64_t q_width = 0;      // heads x head_dim
  std::int64_t kv_width = 0;     // this rank's kv heads x head_dim
  bool qk_norm = false;          // per-head norms on q and k (Qwen 3, Gemma 3)
  bool explicit_scores = false;  // soft-capped scores: the [s, s] weights exist (Gemma 2)
  bool gelu = false;             // GeGLU: one more [tokens, hidden] tensor than SwiGLU
  bool two_layer_mlp = false;    // CLIP's fc1, GELU, fc2: one fewer [tokens, hidden] tensor than SwiGLU
  int gates = 0;                 // tanh gates on the residual branches, each keeping its input
  std::int64_t ffn_width = 0;    // a dense MLP's hidden features on this rank; 0 for experts
  // A mixture-of-experts block (experts > 0).
  std::int64_t experts = 0;        // in the layer
  std::int64_t local_experts = 0;  // on this rank (expert parallelism)
  std::int64_t top_k = 0;
  std::int64_t expert_width = 0;  // each expert's hidden features on this rank
  std::int64_t shared_width = 0;  // the shared expert's; 0: none
};

struct ModelOutline {
  std::string component;             // the model's _component_
  std::vector<LayerOutline> layers;  // in forward order: an image encoder's first
  // The rest: embedding, final norm, output projection (when untied).
  std::vector<PlannedParameter> embedding, output, other;
  // The parameters of sharding units some forwards skip (ft::ShardingUnit::optional) that are not
  // layers (Llama 4's vision embedding, and its head with the projector): held, with their
  // gradients and optimizer state; their activations are the image's (ImageTiles).
  std::vector<PlannedParameter> optional;
  std::int64_t vocab_size = 0;   // the whole vocabulary
  std::int64_t local_vocab = 0;  // the logits' columns on this rank (loss parallel: a slice)
  std::int64_t embed_dim = 0;
  std::int64_t parameters_total = 0;       // the whole model's, every rank's slices together
  std::int64_t parameters_trained = 0;     // of them, those with requires_grad
  double training_flops_per_position = 0;  // at `flops_seq_len` (ft::Model::training_flops_per_position)
  std::int64_t flops_seq_len = 0;
  std::int64_t checkpointable_layers = 0;
  // A model that reads images (ft::ModelLayerOutline): its tiles as built, and the training FLOPs
  // of encoding a micro-batch's images (ft::ModelImageInput; it holds the outlined model).
  std::optional<ft::ImageTiles> image;
  std::function<double(const ft::BatchImages&)> image_training_flops;
};

struct OutlineRequest {
  c10::ScalarType dtype = c10::kFloat;
  int tensor_parallel = 1;
  int expert_parallel = 1;
  std::int64_t seq_len = 0;  // for the FLOPs per position
};

// Builds `root`'s [model] on the meta device, applies [tensor_parallel_plan] when
// tensor_parallel > 1, and reads it: a decoder composed from ft::nn blocks, or a model that
// outlines its layers (ft::ModelLayerOutline: the vision models). Throws ft::ConfigError naming
// `model._component_` for any other (its activations cannot be counted).
ModelOutline outline_model(const ft::Registry& registry, const ft::ConfigNode& root, const OutlineRequest& request);

}  // namespace fthost
