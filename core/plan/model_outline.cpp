#include "plan/model_outline.h"

#include "plan/planning_group.h"

#include <ft/errors.h>
#include <ft/model.h>
#include <ft/model_expert_parallelism.h>
#include <ft/model_sharding.h>
#include <ft/model_tensor_parallelism.h>
#include <ft/nn/decoder_model.h>
#include <ft/nn/feed_forward.h>
#include <ft/nn/mixture_of_experts.h>
#include <ft/tensor_parallel.h>

#include <torch/nn/module.h>

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

LayerOutline outline_layer(const ft::nn::TransformerLayerImpl& layer, std::int64_t embed_dim, const std::string& name) {
  LayerOutline out;
  out.embed_dim = embed_dim;
  const auto& attn = *layer.attn;
  const std::int64_t head_dim = attn.options().head_dim;
  out.q_width = attn.q_proj->weight.size(0);
  out.kv_width = attn.k_proj->weight.size(0);
  out.heads = head_dim > 0 ? out.q_width / head_dim : 0;
  out.qk_norm = static_cast<bool>(attn.q_norm);
  out.explicit_scores = attn.options().softcap > 0;
  if (const auto dense = std::dynamic_pointer_cast<ft::nn::FeedForwardImpl>(layer.mlp)) {
    out.ffn_width = dense->w1->weight.size(0);
    out.gelu = dense->activation == ft::nn::MlpActivation::GeluTanh;
  } else if (const auto moe = std::dynamic_pointer_cast<ft::nn::MixtureOfExpertsImpl>(layer.mlp)) {
    const auto& options = moe->options();
    out.experts = options.router.num_experts;
    out.local_experts = moe->experts->w1.size(0);
    out.top_k = options.router.top_k;
    out.expert_width = moe->experts->w1.size(1);
    out.gelu = options.activation == ft::nn::MlpActivation::GeluTanh;
    if (moe->shared_expert) out.shared_width = moe->shared_expert->w1->weight.size(0);
    out.parameters = shapes_of(layer, name + ".", moe->experts->parameters());
  } else {
    throw ft::Error(name + ".mlp: a feed-forward block the memory plan does not know (a dense MLP or experts)");
  }
  if (out.parameters.empty()) out.parameters = shapes_of(layer, name + ".");
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
  if (!decoder_model)
    model_table.fail("_component_", "the memory plan counts the activations of decoders composed from ft::nn blocks; " +
                                        model_table.component() + " is not one");
  ModelOutline out;
  out.component = model_table.component();
  for (const auto& p : model->module().parameters()) out.parameters_total += p.numel();
  out.flops_seq_len = request.seq_len;
  out.training_flops_per_position = model->training_flops_per_position(request.seq_len);
  if (request.tensor_parallel > 1) {
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
    if (!decoder_model->has_experts())
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
  const ft::nn::TransformerDecoderImpl& decoder = decoder_model->decoder();
  out.vocab_size = decoder.options.vocab_size;
  out.embed_dim = decoder.options.embed_dim;
  out.checkpointable_layers = static_cast<std::int64_t>(decoder.layers.size());
  for (std::size_t i = 0; i < decoder.layers.size(); ++i)
    out.layers.push_back(outline_layer(*decoder.layers[i], out.embed_dim, "layers." + std::to_string(i)));
  out.embedding.push_back({"tok_embeddings.weight", decoder.tok_embeddings.numel(), decoder.tok_embeddings.size(0)});
  out.local_vocab = decoder.output_weight().size(0);
  if (decoder.output.defined()) out.output.push_back({"output.weight", decoder.output.numel(), decoder.output.size(0)});
  out.other = shapes_of(*decoder.norm, "norm.");
  // Everything else the model holds: its optional units' parameters apart, the rest with the root.
  std::unordered_set<const void*> counted;
  for (const auto& layer : decoder.layers)
    for (const auto& p : layer->parameters()) counted.insert(p.unsafeGetTensorImpl());
  for (const auto& p : decoder.norm->parameters()) counted.insert(p.unsafeGetTensorImpl());
  counted.insert(decoder.tok_embeddings.unsafeGetTensorImpl());
  if (decoder.output.defined()) counted.insert(decoder.output.unsafeGetTensorImpl());
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
