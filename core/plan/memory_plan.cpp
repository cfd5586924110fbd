#include "plan/memory_plan.h"

#include "config/byte_size.h"

#include <c10/core/ScalarType.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace fthost {

namespace {

// One phase's memory by what holds it.
struct Held {
  double runtime = 0, parameters = 0, gradients = 0, optimizer = 0, activations = 0, logits = 0, gathered = 0,
         working = 0;
  double total() const {
    return runtime + parameters + gradients + optimizer + activations + logits + gathered + working;
  }
};

struct Unit {
  double full = 0;          // bytes of its parameters whole (after tensor / expert parallelism)
  double local = 0;         // this rank's (after FSDP's split)
  double trained = 0;       // the trainable share of `local`: what gradients take
  double trained_full = 0;  // the trainable share of `full`: a whole gradient before its reduction
  double state = 0;         // its optimizer state on this rank
  double largest_local = 0;
};

class Planner {
 public:
  Planner(const ModelOutline& model, const ParallelLayout& layout, const RunShape& run,
          const OptimizerStateSize& optimizer)
      : model_(model), layout_(layout), run_(run), optimizer_(optimizer) {
    element_ = static_cast<double>(c10::elementSize(run.dtype));
    tokens_ = static_cast<double>(run.batch_size * run.seq_len) / layout.context;
    for (const auto& layer : model.layers) layers_.push_back(unit_of(layer.parameters));
    std::vector<PlannedParameter> head = model.other;
    const auto add = [&](const std::vector<PlannedParameter>& part, bool separate, Unit& own) {
      if (separate) {
        own = unit_of(part);
      } else {
        head.insert(head.end(), part.begin(), part.end());
      }
    };
    add(model.embedding, layout.separate_embedding, embedding_unit_);
    add(model.output, layout.separate_output, output_unit_);
    head_ = unit_of(head);
    optional_ = unit_of(model.optional);
    if (model.image && run.images_per_sample > 0) {
      const ft::ImageTiles& image = *model.image;
      images_ = static_cast<double>(run.batch_size * run.images_per_sample);
      // Tiles the encoder runs: every image padded to the most it takes, or only the real ones.
      encoder_tiles_ = image.every_image_max_tiles ? static_cast<double>(image.max_num_tiles)
                       : run.real_tiles > 0        ? static_cast<double>(run.real_tiles) / images_
                                                   : static_cast<double>(run.tiles_per_image);
      image_states_per_sample_ = static_cast<double>(run.images_per_sample * run.tiles_per_image * image.image_states);
    }
    mark_inputs_needing_grad();
  }

  MemoryPlan plan(double runtime) const {
    MemoryPlan out;
    out.runtime = runtime;
    const double params = total(&Unit::local), state = total(&Unit::state);
    const double grads_all = total(&Unit::trained);
    const bool host_shards = layout_.cpu_offload && run_.on_gpu && layout_.sharded;
    Held base;
    base.runtime = runtime;
    base.parameters = host_shards ? 0 : params;
    base.optimizer = host_shards ? 0 : state;
    const double grads_device = host_shards ? 0 : grads_all;
    // Gradients held from the step's earlier micro-batches while the last one runs.
    const double earlier_grads = run_.accumulation > 1 ? grads_device : 0;

    std::vector<double> saved, whole;
    double kept_by_image_layers = 0;
    for (std::size_t i = 0; i < model_.layers.size(); ++i) {
      const LayerOutline& layer = model_.layers[i];
      const double all = saved_by_layer(layer, input_needs_grad_[i]);
      whole.push_back(all);
      const auto index = static_cast<std::size_t>(layer.checkpoint_index);
      const bool checkpointed =
          layer.checkpoint_index >= 0 && index < run_.checkpointed.size() && run_.checkpointed[index] && all > 0;
      double kept = checkpointed ? element_ * tokens_of(layer) * static_cast<double>(layer.embed_dim) : all;
      if (checkpointed && run_.offload_activations && run_.on_gpu) {
        out.host_bytes += kept;
        kept = 0;
      }
      saved.push_back(kept);
      if (layer.image_tokens || layer.cross_attention) kept_by_image_layers += kept;
    }
    // The image encoder's embedding and head, and its attention bias: kept until the encoder's
    // backward, the last to run.
    const double image_outside_layers = outside_image_layers();
    double kept_by_layers = image_outside_layers;
    for (double s : saved) kept_by_layers += s;
    const double d = static_cast<double>(model_.embed_dim);
    const double final_norm = 2 * element_ * tokens_ * d;  // the norm's input and the projection's
    // The logits the loss keeps for backward: the model's, or (LinearCrossEntropyLoss) each
    // chunk's projection of the kept hidden states, all of them alive until backward.
    const double logit_elements = tokens_ * static_cast<double>(model_.local_vocab);
    // Under tensor parallelism the loss is computed over the vocabulary slices (loss parallel),
    // without the fused kernel: it keeps its float32 exponentials for backward too.
    const double loss_parallel = layout_.tensor > 1 ? 4 * logit_elements : 0;
    const double logits = element_ * logit_elements + loss_parallel;
    const double chunk_logits = run_.loss_projects_hidden ? element_ * tokens_ * d : 0;  // the kept rows' copy
    const double head_gathered = layout_.sharded ? head_.full - head_.local : 0;

    std::vector<std::pair<std::string, Held>> phases;
    {
      Held forward = base;
      forward.gradients = earlier_grads;
      forward.activations = kept_by_layers + final_norm;
      forward.logits = logits;
      forward.working = chunk_logits;
      forward.gathered = head_gathered + output_unit_gathered();
      if (layout_.sharded && !layout_.reshard_after_forward)
        for (const auto& unit : layers_) forward.gathered += unit.full - unit.local;
      phases.emplace_back("forward (the loss)", forward);

      Held backward_start = forward;
      // The logits' gradient, and the output projection's whole gradient before a sharded
      // strategy reduces it to this rank's share.
      backward_start.working = logits + chunk_logits;  // the gradients of what the loss kept
      const Unit& out_unit = layout_.separate_output ? output_unit_ : head_;
      backward_start.gradients = earlier_grads + (layout_.sharded ? out_unit.trained_full : out_unit.trained);
      phases.emplace_back("backward (the output projection)", backward_start);
    }
    // Backward through the layers, last first: their activations freed, their gradients made.
    double grads_done = head_.trained + embedding_unit_.trained + output_unit_.trained;
    double kept_below = kept_by_layers;
    std::size_t worst_layer = 0;
    Held worst_backward;
    bool found_backward_layer = false;
    for (std::size_t n = layers_.size(); n-- > 0;) {
      kept_below -= saved[n];
      if (!runs(model_.layers[n])) {
        grads_done += layers_[n].trained;
        continue;
      }
      Held layer = base;
      const double output_gradient =
          element_ * tokens_of(model_.layers[n]) * static_cast<double>(model_.layers[n].embed_dim);
      layer.activations = kept_below + whole[n] + output_gradient;
      layer.working = working_of(model_.layers[n]);
      const double done = optimizer_in_backward() ? largest_local() : grads_done;
      layer.gradients = std::max(earlier_grads, host_shards ? 0.0 : done);
      if (layout_.sharded) {
        layer.gathered =
            head_gathered + (layers_[n].full - layers_[n].local) + layers_[n].trained_full;  // + whole gradients
        if (layout_.prefetch && n > 0) layer.gathered += layers_[n - 1].full - layers_[n - 1].local;
        if (!layout_.reshard_after_forward)
          for (std::size_t j = 0; j < n; ++j) layer.gathered += layers_[j].full - layers_[j].local;
      }
      if (!found_backward_layer || layer.total() > worst_backward.total()) {
        found_backward_layer = true;
        worst_backward = layer;
        worst_layer = n;
      }
      grads_done += layers_[n].trained;
    }
    if (found_backward_layer)
      phases.emplace_back(fmt::format("backward ({})", model_.layers[worst_layer].label), worst_backward);
    {
      Held step = base;
      step.gradients = optimizer_in_backward() ? 0 : grads_device;
      phases.emplace_back(optimizer_in_backward() ? "after backward (optimizer in backward)" : "optimizer step", step);
    }

    const Held* peak = nullptr;
    for (const auto& [name, held] : phases) {
      out.phases.push_back({name, held.total()});
      if (!peak || held.total() > out.peak) {
        peak = &held;
        out.peak = held.total();
        out.peak_phase = name;
      }
    }
    out.parameters = params;
    out.gradients = optimizer_in_backward() ? largest_local() : grads_all;
    out.optimizer_state = state;
    out.activations = kept_by_layers + final_norm;
    out.image_activations = kept_by_image_layers + image_outside_layers;
    out.logits = logits;
    out.gathered = peak->gathered;
    if (host_shards) out.host_bytes += params + state + grads_all;
    out.lines = {
        {"runtime", peak->runtime, run_.on_gpu ? "CUDA context and libraries" : "the process before the model exists"},
        {"parameters", peak->parameters, parameter_detail()},
        {"gradients", peak->gradients, optimizer_in_backward() ? "each freed by its step in backward" : ""},
        {"optimizer state", peak->optimizer, optimizer_.summary},
        {"activations", peak->activations, activation_detail(out.image_activations)},
        {"logits", peak->logits,
         fmt::format("{} tokens x {} columns", static_cast<std::int64_t>(tokens_), model_.local_vocab)},
        {"gathered by FSDP", peak->gathered, layout_.sharded ? "whole units around their compute" : "not sharded"},
        {"working tensors", peak->working, "gradients of activations and logits in flight"},
    };
    return out;
  }

 private:
  bool optimizer_in_backward() const { return run_.optimizer_in_backward; }

  double output_unit_gathered() const {
    return layout_.sharded && layout_.separate_output ? output_unit_.full - output_unit_.local : 0;
  }

  Unit unit_of(const std::vector<PlannedParameter>& parameters) const {
    Unit unit;
    for (const auto& p : parameters) {
      double local = static_cast<double>(p.numel);
      // Experts split across the expert-parallel ranks are sharded only over the shard ranks
      // holding the same experts.
      const int shard = p.expert ? std::max(1, layout_.shard / layout_.expert) : layout_.shard;
      if (layout_.sharded && p.dim0 > 0 && shard > 1) {
        const std::int64_t rows = (p.dim0 + shard - 1) / shard;
        local = static_cast<double>(rows) * static_cast<double>(p.numel / p.dim0);
      }
      unit.full += static_cast<double>(p.numel) * element_;
      unit.local += local * element_;
      if (!p.trainable) continue;
      unit.trained += local * element_;
      unit.trained_full += static_cast<double>(p.numel) * element_;
      unit.state += optimizer_.bytes(static_cast<std::int64_t>(local), static_cast<int>(element_));
      unit.largest_local = std::max(unit.largest_local, local * element_);
    }
    return unit;
  }

  double total(double Unit::*field) const {
    double sum = head_.*field + embedding_unit_.*field + output_unit_.*field + optional_.*field;
    for (const auto& unit : layers_) sum += unit.*field;
    return sum;
  }

  double largest_local() const {
    double largest = std::max({head_.largest_local, embedding_unit_.largest_local, output_unit_.largest_local});
    for (const auto& unit : layers_) largest = std::max(largest, unit.largest_local);
    return largest;
  }

  // The tokens a layer runs over in one micro-batch on this rank.
  double tokens_of(const LayerOutline& layer) const {
    if (!layer.image_tokens) return tokens_;
    return images_ * encoder_tiles_ * static_cast<double>(model_.image->encoder_tokens);
  }

  // Text alone skips the image encoder and the cross-attention layers.
  bool runs(const LayerOutline& layer) const { return (!layer.image_tokens && !layer.cross_attention) || images_ > 0; }

  // Whether each layer's input needs a gradient, in forward order: a frozen layer whose input
  // needs none keeps nothing for backward. The text starts needing one from a trained embedding
  // (or image features put in its place); the image tokens from the first encoder layer that trains.
  void mark_inputs_needing_grad() {
    bool text = false, image = false;
    for (const auto& p : model_.embedding) text = text || p.trainable;
    const bool features = images_ > 0 && model_.image && model_.image->features_need_grad;
    if (features && model_.image->image_states == 0) text = true;  // early fusion
    for (const auto& layer : model_.layers) {
      bool& stream = layer.image_tokens ? image : text;
      input_needs_grad_.push_back(stream);
      if (!runs(layer)) continue;
      stream = stream || layer.trainable || (layer.cross_attention && features);
    }
  }

  // What one layer's forward keeps for its backward (docs/plan.md, "Activations").
  double saved_by_layer(const LayerOutline& layer, bool input_needs_grad) const {
    if (!runs(layer) || (!layer.trainable && !input_needs_grad)) return 0;
    // A frozen layer keeps what its input's gradient needs, not its weights' inputs: no norm's
    // output, no copy of attention's output, no MLP product.
    const bool trains = layer.trainable;
    const double e = element_, t = tokens_of(layer);
    const auto d = static_cast<double>(layer.embed_dim), q = static_cast<double>(layer.q_width),
               kv = static_cast<double>(layer.kv_width), heads = static_cast<double>(layer.heads);
    const double gates = trains ? static_cast<double>(layer.gates) * d : 0;  // each trained gate's input
    double per_hidden = layer.gelu ? 4 : layer.two_layer_mlp ? 2 : 3;
    if (!trains) per_hidden -= 1;
    if (layer.cross_attention) {
      // Text side: the norms' inputs (and outputs), q before and after its norm, attention's
      // output and its masked copy for the output projection. Image side: k before and after its
      // norm, v; and the additive form of the [text, image states] mask.
      double widths = (trains ? 4 * d + 3 * q : 2 * d + 2 * q) + (layer.qk_norm ? q : 0) + gates;
      widths += static_cast<double>(layer.ffn_width) * per_hidden;
      const double states = image_states_in_batch();
      double bytes = e * t * widths + 4 * t * (2 + heads);
      bytes += e * states * (layer.qk_norm ? 3 : 2) * kv;
      bytes += e * t * image_states_per_sample_;
      return bytes;
    }
    // Each norm's input and output, q / k / v after the positions, attention's output and its
    // [tokens, heads x head_dim] copy for the output projection.
    double widths = (trains ? 4 * d + 3 * q : 2 * d + 2 * q) + 2 * kv + gates;
    if (layer.qk_norm) widths += q + kv;
    double bytes = e * t * widths + 4 * t * (2 + heads);  // + the norms' rstd, attention's logsumexp
    if (layer.explicit_scores) {
      const auto s = static_cast<double>(run_.seq_len);
      bytes += static_cast<double>(run_.batch_size) * heads * s * s / layout_.context * (3 * e + 4);
    }
    if (layer.experts == 0) return bytes + e * t * static_cast<double>(layer.ffn_width) * per_hidden;
    // Routing: float32 logits and scores; each token's top_k rows gathered to their experts (the
    // expected share with expert parallelism is the same rows per rank), each expert's hidden
    // features, and its output for the weighted sum.
    const auto k = static_cast<double>(layer.top_k);
    bytes += 8 * t * static_cast<double>(layer.experts);
    bytes += e * t * k * (2 * d + static_cast<double>(layer.expert_width) * per_hidden);
    bytes += e * t * static_cast<double>(layer.shared_width) * per_hidden;
    return bytes;
  }

  // The image states the cross-attention layers read in one micro-batch.
  double image_states_in_batch() const { return static_cast<double>(run_.batch_size) * image_states_per_sample_; }

  // Kept outside the layers for the encoder's backward: each tile's embedding and head, and the
  // encoder's shared attention bias over each image's tiles.
  double outside_image_layers() const {
    if (images_ == 0) return 0;
    const ft::ImageTiles& image = *model_.image;
    double bytes = element_ * images_ * encoder_tiles_ * image.elements_kept_outside_layers;
    if (image.shared_attention_bias) {
      const double side = encoder_tiles_ * static_cast<double>(image.encoder_tokens);
      bytes += element_ * images_ * side * side;
    }
    return bytes;
  }

  // The largest tensors alive at once inside one layer's backward beside what it saved.
  double working_of(const LayerOutline& layer) const {
    const auto d = static_cast<double>(layer.embed_dim);
    double widest = static_cast<double>(layer.q_width + 2 * layer.kv_width + layer.q_width);
    if (layer.experts == 0) {
      widest = std::max(widest, 2.0 * static_cast<double>(layer.ffn_width));
    } else {
      widest = std::max(widest, 2.0 * static_cast<double>(layer.top_k * layer.expert_width) +
                                    2.0 * static_cast<double>(layer.top_k) * d);
    }
    const double t = tokens_of(layer);
    double bytes = element_ * t * (2 * d + widest);
    if (layer.cross_attention)  // the gradients of the keys and values over the image states
      bytes += element_ * image_states_in_batch() * 2 * static_cast<double>(layer.kv_width);
    if (layout_.context > 1)  // the other ranks' keys and values, gathered for this rank's queries
      bytes += element_ * t * (layout_.context - 1) * 2 * static_cast<double>(layer.kv_width);
    return bytes;
  }

  std::string parameter_detail() const {
    std::string split;
    if (layout_.tensor > 1) split += fmt::format(", tensor-parallel slices of {}", layout_.tensor);
    if (layout_.expert > 1) split += fmt::format(", experts split {} ways", layout_.expert);
    if (layout_.sharded) split += fmt::format(", sharded over {} ranks", layout_.shard);
    if (optional_.local > 0)
      split += fmt::format(", {} of them in units only batches with images use", format_bytes(optional_.local));
    return dtype_name(run_.dtype) + split;
  }

  std::string activation_detail(double image_activations) const {
    std::int64_t checkpointed = 0;
    for (bool c : run_.checkpointed) checkpointed += c ? 1 : 0;
    std::string images;
    if (images_ > 0)
      images = fmt::format(", {} image{} x {} tiles x {} tokens (the forward keeps {} for the images)",
                           static_cast<std::int64_t>(images_), images_ > 1 ? "s" : "",
                           static_cast<std::int64_t>(encoder_tiles_), model_.image->encoder_tokens,
                           format_bytes(image_activations));
    else if (model_.image)
      images = ", text alone (no images)";
    return fmt::format("{} x {} tokens{}{}, {} of {} layers checkpointed{}", run_.batch_size, run_.seq_len,
                       layout_.context > 1 ? fmt::format(" / {} context-parallel ranks", layout_.context) : "", images,
                       checkpointed, run_.checkpointed.size(),
                       run_.offload_activations && run_.on_gpu ? ", offloaded" : "");
  }

  const ModelOutline& model_;
  const ParallelLayout& layout_;
  const RunShape& run_;
  const OptimizerStateSize& optimizer_;
  double element_ = 4, tokens_ = 0;
  double images_ = 0;                   // in one micro-batch; 0: text alone
  double encoder_tiles_ = 0;            // each image's tiles as the encoder runs them
  double image_states_per_sample_ = 0;  // what the cross-attention layers read per sample
  std::vector<bool> input_needs_grad_;  // per layer
  std::vector<Unit> layers_;
  Unit head_, embedding_unit_, output_unit_;
  Unit optional_;  // optional units' parameters outside the layers: held, not gathered by the plan's phases
};

}  // namespace

std::string dtype_name(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kFloat: return "fp32";
    case c10::kBFloat16: return "bf16";
    case c10::kHalf: return "fp16";
    default: return c10::toString(dtype);
  }
}

MemoryPlan plan_memory(const ModelOutline& model, const ParallelLayout& layout, const RunShape& run,
                       const OptimizerStateSize& optimizer, double runtime) {
  MemoryPlan plan = Planner(model, layout, run, optimizer).plan(runtime);
  if (!optimizer.known) plan.assumptions.push_back("optimizer " + optimizer.component + ": " + optimizer.summary);
  return plan;
}

}  // namespace fthost
