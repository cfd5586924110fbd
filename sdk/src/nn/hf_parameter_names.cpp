#include <ft/nn/hf_parameter_names.h>

#include <ft/errors.h>
#include <ft/nn/feed_forward.h>

#include <string>
#include <utility>

namespace ft::nn {

void dense_mlp_names(FeedForwardBlockImpl& block, const std::string& prefix, const std::string& module,
                     bool fused_gate_up, std::vector<ft::NamedTensor>& out) {
  const auto* mlp = dynamic_cast<const FeedForwardImpl*>(&block);
  if (!mlp)
    throw ft::Error(prefix + module +
                    ": the feed-forward block is no dense MLP, so its Hugging Face names are the "
                    "family's to give (HfLayout::feed_forward_names)");
  const std::string p = prefix + module + ".";
  if (fused_gate_up) {
    out.push_back({p + "gate_up_proj.weight", at::Tensor(), {mlp->w1->weight, mlp->w3->weight}});
  } else {
    out.push_back({p + "gate_proj.weight", mlp->w1->weight});
    out.push_back({p + "up_proj.weight", mlp->w3->weight});
  }
  out.push_back({p + "down_proj.weight", mlp->w2->weight});
}

std::vector<ft::NamedTensor> hf_parameter_names(TransformerDecoderImpl& decoder, const HfLayout& layout) {
  std::vector<ft::NamedTensor> named;
  auto add = [&](std::string name, const at::Tensor& t) {
    if (t.defined()) named.push_back({std::move(name), t, {}});
  };
  auto add_fused = [&](std::string name, std::vector<at::Tensor> parts) {
    named.push_back({std::move(name), at::Tensor(), std::move(parts)});
  };
  const std::string& model = layout.decoder_prefix;
  add(model + "embed_tokens.weight", decoder.tok_embeddings);
  for (std::size_t i = 0; i < decoder.layers.size(); ++i) {
    const auto& layer = decoder.layers[i];
    const auto& attn = layer->attn;
    const std::string p = model + "layers." + std::to_string(i) + ".";
    add(p + "input_layernorm.weight", layer->sa_norm->scale);
    if (layout.fused_qkv) {
      add_fused(p + "self_attn.qkv_proj.weight", {attn->q_proj->weight, attn->k_proj->weight, attn->v_proj->weight});
    } else {
      const auto add_rows = [&](std::string name, const at::Tensor& t) {
        if (!t.defined()) return;
        named.push_back({std::move(name), t});
        if (layout.query_key_rows) layout.query_key_rows(static_cast<std::int64_t>(i), named.back());
      };
      add_rows(p + "self_attn.q_proj.weight", attn->q_proj->weight);
      add_rows(p + "self_attn.q_proj.bias", attn->q_proj->bias);
      add_rows(p + "self_attn.k_proj.weight", attn->k_proj->weight);
      add_rows(p + "self_attn.k_proj.bias", attn->k_proj->bias);
      add(p + "self_attn.v_proj.weight", attn->v_proj->weight);
      add(p + "self_attn.v_proj.bias", attn->v_proj->bias);
    }
    add(p + "self_attn.o_proj.weight", attn->output_proj->weight);
    if (attn->q_norm) {
      add(p + "self_attn.q_norm.weight", attn->q_norm->scale);
      add(p + "self_attn.k_norm.weight", attn->k_norm->scale);
    }
    if (layer->sa_scale) {
      add(p + "post_attention_layernorm.weight", layer->sa_scale->scale);
      add(p + "pre_feedforward_layernorm.weight", layer->mlp_norm->scale);
      add(p + "post_feedforward_layernorm.weight", layer->mlp_scale->scale);
    } else {
      add(p + "post_attention_layernorm.weight", layer->mlp_norm->scale);
    }
    if (layout.feed_forward_names)
      layout.feed_forward_names(static_cast<std::int64_t>(i), *layer->mlp, p, named);
    else
      dense_mlp_names(*layer->mlp, p, "mlp", layout.fused_gate_up, named);
  }
  add(model + "norm.weight", decoder.norm->scale);
  add(layout.lm_head, decoder.output);
  return named;
}

}  // namespace ft::nn
