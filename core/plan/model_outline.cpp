#include "plan/model_outline.h"

#include "plan/planning_group.h"

#include <ft/errors.h>
#include <ft/model.h>
#include <ft/model_expert_parallelism.h>
#include <ft/model_image_input.h>
#include <ft/model_layer_outline.h>
#include <ft/model_sharding.h>
#include <ft/model_tensor_parallelism.h>
#include <ft/nn/clip_mlp.h>
#include <ft/nn/cross_attention_layer.h>
#include <ft/nn/decoder_model.h>
#include <ft/nn/feed_forward.h>
#include <ft/nn/mixture_of_experts.h>
#include <ft/nn/tanh_gate.h>
#include <ft/tensor_parallel.h>

#include <torch/nn/module.h>

#include <algorithm>
#include <unordered_set>
#include <utility>

namespace fthost {

namespace {

PlannedParameter shape_of(const at::Tensor& p, std::string name, bool expert = false) {
  return {std::move(name), p.numel(), p.dim() > 0 ? p.size(0) : 1, expert, p.requires_grad()};
}

std::vector<PlannedParameter> shapes_of(const torch::nn::Module& module, const std::string& prefix,
                                        const std::vector<at::Tensor>& experts = {}) {
  std::vector<PlannedParameter> shapes;
  const std::vector<at::Tensor> parameters = module.parameters(/*recurse=*/true);
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const at::Tensor& p = parameters[i];
    bool expert = false;
    for (const auto& e : experts) expert = expert || e.is_same(p);
    shapes.push_back(shape_of(p, prefix + std::to_string(i), expert));
  }
  return shapes;
}

bool any_trainable(const std::vector<PlannedParameter>& parameters) {
  for (const auto& p : parameters)
    if (p.trainable) return true;
  return false;
}

int tanh_gates(const ft::nn::Norm& first, const ft::nn::Norm& second) {
  int gates = 0;
  for (const auto* gate : {&first, &second})
    if (*gate && std::dynamic_pointer_cast<ft::nn::TanhGateImpl>(*gate)) ++gates;
  return gates;
}

// A dense MLP's hidden width and kind; false for a block the plan does not know.
bool read_dense_mlp(const std::shared_ptr<ft::nn::FeedForwardBlockImpl>& mlp, LayerOutline& out) {
  if (const auto dense = std::dynamic_pointer_cast<ft::nn::FeedForwardImpl>(mlp)) {
    out.ffn_width = dense->w1->weight.size(0);
    out.gelu = dense->activation == ft::nn::MlpActivation::GeluTanh;
    return true;
  }
  if (const auto clip = std::dynamic_pointer_cast<ft::nn::ClipMlpImpl>(mlp)) {
    out.ffn_width = clip->w1->weight.size(0);
    out.two_layer_mlp = true;
    return true;
  }
  return false;
}

LayerOutline outline_layer(const ft::nn::TransformerLayerImpl& layer, std::int64_t embed_dim, const std::string& name) {
  LayerOutline out;
  out.label = name;
  out.embed_dim = embed_dim;
  const auto& attn = *layer.attn;
  const std::int64_t head_dim = attn.options().head_dim;
  out.q_width = attn.q_proj->weight.size(0);
  out.kv_width = attn.k_proj->weight.size(0);
  out.heads = head_dim > 0 ? out.q_width / head_dim : 0;
  out.qk_norm = static_cast<bool>(attn.q_norm);
  out.explicit_scores = attn.options().softcap > 0;
  out.gates = tanh_gates(layer.sa_scale, layer.mlp_scale);
  const auto moe = std::dynamic_pointer_cast<ft::nn::MixtureOfExpertsImpl>(layer.mlp);
  if (moe) {
    const auto& options = moe->options();
    out.experts = options.router.num_experts;
    out.local_experts = moe->experts->w1.size(0);
    out.top_k = options.router.top_k;
    out.expert_width = moe->experts->w1.size(1);
    out.gelu = options.activation == ft::nn::MlpActivation::GeluTanh;
    if (moe->shared_expert) out.shared_width = moe->shared_expert->w1->weight.size(0);
    out.parameters = shapes_of(layer, name + ".", moe->experts->parameters());
  } else if (!read_dense_mlp(layer.mlp, out)) {
    throw ft::Error(name + ".mlp: a feed-forward block the memory plan does not know (a dense MLP or experts)");
  }
  if (out.parameters.empty()) out.parameters = shapes_of(layer, name + ".");
  out.trainable = any_trainable(out.parameters);
  return out;
}

LayerOutline outline_cross_layer(const ft::nn::CrossAttentionLayerImpl& layer, const std::string& name) {
  LayerOutline out;
  out.label = name;
  out.cross_attention = true;
  const auto& attn = *layer.attn;
  out.embed_dim = attn.q_proj->weight.size(1);
  out.q_width = attn.q_proj->weight.size(0);
  out.kv_width = attn.k_proj->weight.size(0);
  const std::int64_t head_dim = attn.options().head_dim;
  out.heads = head_dim > 0 ? out.q_width / head_dim : 0;
  out.qk_norm = static_cast<bool>(attn.q_norm);
  out.gates = tanh_gates(layer.ca_scale, layer.mlp_scale);
  if (!read_dense_mlp(layer.mlp, out))
    throw ft::Error(name + ".mlp: a feed-forward block the memory plan does not know (a dense MLP)");
  out.parameters = shapes_of(layer, name + ".");
  out.trainable = any_trainable(out.parameters);
  return out;
}

// A layer the model outlined (ft::ModelLayerOutline), by its block's kind.
LayerOutline outline_outlined_layer(const ft::OutlinedLayer& layer) {
  LayerOutline out;
  if (const auto* self = dynamic_cast<const ft::nn::TransformerLayerImpl*>(layer.module.get())) {
    out = outline_layer(*self, self->attn->q_proj->weight.size(1), layer.name);
  } else if (const auto* cross = dynamic_cast<const ft::nn::CrossAttentionLayerImpl*>(layer.module.get())) {
    out = outline_cross_layer(*cross, layer.name);
  } else {
    throw ft::Error(layer.name +
                    ": a layer the memory plan does not know (a transformer or cross-attention layer of ft::nn)");
  }
  out.image_tokens = layer.tokens == ft::LayerTokens::Image;
  out.checkpoint_index = layer.checkpoint_index;
  return out;
}

}  // namespace

ModelOutline outline_model(const ft::Registry& registry, const ft::ConfigNode& root, const OutlineRequest& request) {
  const ft::ConfigNode model_table = root.table("model");
  ft::Model::Args args;
  args.dtype = request.dtype;
  args.device = c10::Device(c10::DeviceType::Meta);
  const std::shared_ptr<ft::Model> model = registry.instantiate<ft::Model>(model_table, args);
  auto* decoder_model = dynamic_cast<ft::nn::DecoderModel*>(model.get());
  auto* layer_outline = ft::role_of<ft::ModelLayerOutline>(*model);
  if (!decoder_model && !layer_outline)
    model_table.fail("_component_",
                     "the memory plan counts the activations of decoders composed from ft::nn blocks, or of models "
                     "that outline their layers (ft::ModelLayerOutline); " +
                         model_table.component() + " is neither");
  ModelOutline out;
  out.component = model_table.component();
  for (const auto& p : model->module().parameters()) {
    out.parameters_total += p.numel();
    if (p.requires_grad()) out.parameters_trained += p.numel();
  }
  out.flops_seq_len = request.seq_len;
  out.training_flops_per_position = model->training_flops_per_position(request.seq_len);
  if (request.tensor_parallel > 1) {
    if (!decoder_model)
      root.fail("tensor_parallel_dim", std::to_string(request.tensor_parallel) + ": " + out.component +
                                           " has no tensor-parallel plan fthost can apply (1: none)");
    const auto plan = registry.instantiate<ft::TensorParallelPlan>(root.table("tensor_parallel_plan"));
    try {
      decoder_model->apply_tensor_parallel(plan->modules(), planning_group(request.tensor_parallel));
    } catch (const ft::ConfigError&) {
      throw;
    } catch (const ft::Error& e) {
      throw ft::ConfigError("tensor_parallel_plan: " + std::string(e.what()));
    }
  }
  if (request.expert_parallel > 1) {
    if (!decoder_model || !decoder_model->has_experts())
      root.fail("expert_parallel_dim",
                std::to_string(request.expert_parallel) + ": this model has no mixture-of-experts layers to split");
    try {
      decoder_model->apply_expert_parallel(planning_group(request.expert_parallel));
    } catch (const ft::ConfigError&) {
      throw;
    } catch (const ft::Error& e) {
      root.fail("expert_parallel_dim", e.what());
    }
  }
  std::unordered_set<const void*> counted;
  const auto count_all = [&counted](const std::vector<at::Tensor>& parameters) {
    for (const auto& p : parameters) counted.insert(p.unsafeGetTensorImpl());
  };
  std::vector<ft::OutlinedLayer> outlined;
  if (layer_outline) {
    outlined = layer_outline->outlined_layers();
    out.image = layer_outline->image_tiles();
    if (auto* reader = ft::role_of<ft::ModelImageInput>(*model))
      out.image_training_flops = [model, reader](const ft::BatchImages& images) {
        return reader->image_training_flops(images);
      };
  }
  if (decoder_model) {
    // The decoder's layers as split above; an outlining model adds its image encoder's before them.
    for (const auto& layer : outlined)
      if (layer.tokens == ft::LayerTokens::Image) out.layers.push_back(outline_outlined_layer(layer));
    const ft::nn::TransformerDecoderImpl& decoder = decoder_model->decoder();
    out.vocab_size = decoder.options.vocab_size;
    out.embed_dim = decoder.options.embed_dim;
    out.checkpointable_layers = static_cast<std::int64_t>(decoder.layers.size());
    for (std::size_t i = 0; i < decoder.layers.size(); ++i) {
      LayerOutline layer = outline_layer(*decoder.layers[i], out.embed_dim, "layers." + std::to_string(i));
      layer.label = "layer " + std::to_string(i);
      layer.checkpoint_index = static_cast<std::int64_t>(i);
      out.layers.push_back(std::move(layer));
    }
    out.embedding.push_back(shape_of(decoder.tok_embeddings, "tok_embeddings.weight"));
    out.local_vocab = decoder.output_weight().size(0);
    if (decoder.output.defined()) out.output.push_back(shape_of(decoder.output, "output.weight"));
    out.other = shapes_of(*decoder.norm, "norm.");
    for (const auto& layer : decoder.layers) count_all(layer->parameters());
    count_all(decoder.norm->parameters());
    counted.insert(decoder.tok_embeddings.unsafeGetTensorImpl());
    if (decoder.output.defined()) counted.insert(decoder.output.unsafeGetTensorImpl());
  } else {
    for (const auto& layer : outlined) {
      out.layers.push_back(outline_outlined_layer(layer));
      if (layer.checkpoint_index >= 0)
        out.checkpointable_layers = std::max(out.checkpointable_layers, layer.checkpoint_index + 1);
    }
    const at::Tensor output = model->output_weight();
    out.vocab_size = output.size(0);
    out.local_vocab = output.size(0);
    out.embed_dim = output.size(1);
    const std::vector<at::Tensor> embedding = layer_outline->text_embedding_parameters();
    for (std::size_t i = 0; i < embedding.size(); ++i)
      out.embedding.push_back(shape_of(embedding[i], "embedding." + std::to_string(i)));
    out.output.push_back(shape_of(output, "output.weight"));
    count_all(embedding);
    counted.insert(output.unsafeGetTensorImpl());
  }
  for (const auto& layer : outlined)
    if (!decoder_model || layer.tokens == ft::LayerTokens::Image) count_all(layer.module->parameters());
  // Everything else the model holds: its optional units' parameters apart, the rest with the root.
  if (auto* sharding = ft::role_of<ft::ModelSharding>(*model))
    for (const auto& unit : sharding->sharding_units()) {
      if (!unit.optional) continue;
      for (std::size_t i = 0; i < unit.parameters.size(); ++i)
        if (counted.insert(unit.parameters[i].unsafeGetTensorImpl()).second)
          out.optional.push_back(shape_of(unit.parameters[i], unit.name + "." + std::to_string(i)));
    }
  const std::vector<at::Tensor> all = model->module().parameters();
  for (std::size_t i = 0; i < all.size(); ++i)
    if (counted.insert(all[i].unsafeGetTensorImpl()).second)
      out.other.push_back(shape_of(all[i], "parameter." + std::to_string(i)));
  return out;
}

}  // namespace fthost
