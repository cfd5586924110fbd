// The Hugging Face names of a decoder's parameters, in checkpoint order. Every family here names
// them as LlamaForCausalLM does (model.layers.N.self_attn.q_proj.weight, ...), with three
// variations: Qwen 3's q_norm / k_norm, Gemma 2's four norms per layer (where
// post_attention_layernorm is the norm after attention, not the one before the MLP), and Phi-3's
// fused checkpoints, which store q/k/v as one qkv_proj and gate/up as one gate_up_proj.
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
