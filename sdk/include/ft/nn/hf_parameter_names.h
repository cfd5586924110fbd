// The Hugging Face names of a decoder's parameters, in checkpoint order, as LlamaForCausalLM names
// them (model.layers.N.self_attn.q_proj.weight, ...), following the modules the layers have: q/k
// norms where attention has them (Qwen 3), four norms per layer where a layer has post-norms
// (Gemma 2: post_attention_layernorm is then the norm after attention, not the one before the
// MLP), and, by HfLayout, fused checkpoints that store q/k/v as one qkv_proj and gate/up as one
// gate_up_proj (Phi-3).
#pragma once

#include <ft/model.h>
#include <ft/nn/transformer_decoder.h>

#include <vector>

namespace ft::nn {

struct HfLayout {
  bool fused_qkv = false;      // self_attn.qkv_proj.weight = [q; k; v] (Phi-3, Phi-4)
  bool fused_gate_up = false;  // mlp.gate_up_proj.weight = [gate; up] (Phi-3, Phi-4)
};

std::vector<ft::NamedTensor> hf_parameter_names(TransformerDecoderImpl& decoder, const HfLayout& layout);

}  // namespace ft::nn
