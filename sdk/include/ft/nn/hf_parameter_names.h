// The Hugging Face names of a decoder's parameters, in checkpoint order, as LlamaForCausalLM names
// them (model.layers.N.self_attn.q_proj.weight, ...), following the modules the layers have: q/k
// norms where attention has them (Qwen 3), four norms per layer where a layer has post-norms
// (Gemma 2: post_attention_layernorm is then the norm after attention, not the one before the
// MLP), and, by HfLayout, fused checkpoints that store q/k/v as one qkv_proj and gate/up as one
// gate_up_proj (Phi-3).
#pragma once

#include <ft/model.h>
#include <ft/nn/transformer_decoder.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ft::nn {

class FeedForwardBlockImpl;

struct HfLayout {
  bool fused_qkv = false;      // self_attn.qkv_proj.weight = [q; k; v] (Phi-3, Phi-4)
  bool fused_gate_up = false;  // mlp.gate_up_proj.weight = [gate; up] (Phi-3, Phi-4)
  // Where the decoder's tensors sit: "model." and "lm_head.weight" for a *ForCausalLM; a
  // multimodal checkpoint nests its language model (Llama 4: "language_model.model.").
  std::string decoder_prefix = "model.";
  std::string lm_head = "lm_head.weight";
  // The names of a layer's feed-forward block's tensors, appended to `out`; `prefix` is the
  // layer's ("model.layers.N."). Unset: the dense MLP's mlp.{gate,up,down}_proj.weight.
  using FeedForwardNames = std::function<void(std::int64_t layer, FeedForwardBlockImpl& block,
                                              const std::string& prefix, std::vector<ft::NamedTensor>& out)>;
  FeedForwardNames feed_forward_names;
  // Per layer, the layout of its q_proj / k_proj rows where the checkpoint differs (Llama 4
  // pairs each head's rotary dimensions interleaved): maps the live tensor to the checkpoint's
  // and back. Unset: as stored.
  using RowLayout = std::function<void(std::int64_t layer, ft::NamedTensor& projection)>;
  RowLayout query_key_rows;
};

// The dense MLP's tensors as LlamaForCausalLM names them ({prefix}mlp.gate_proj.weight, ...), or
// fused as {prefix}mlp.gate_up_proj.weight; fails when the block is not a dense MLP.
void dense_mlp_names(FeedForwardBlockImpl& block, const std::string& prefix, const std::string& module,
                     bool fused_gate_up, std::vector<ft::NamedTensor>& out);

std::vector<ft::NamedTensor> hf_parameter_names(TransformerDecoderImpl& decoder, const HfLayout& layout);

}  // namespace ft::nn
