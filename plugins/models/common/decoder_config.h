// The architecture of a pre-norm decoder of the families in plugins/models as values: everything
// that decides parameter shapes and the forward computation. Each family's folder fills it in
// (its builders, named sizes and config.json mapping); build_decoder (decoder_builder.cpp)
// composes the ft::nn blocks it describes.
#pragma once

#include <ft/nn/attention.h>
#include <ft/nn/feed_forward.h>
#include <ft/nn/rotary_embedding.h>
#include <ft/nn/token_choice_router.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ft_models {

using ft::nn::Llama3RopeScaling;
using ft::nn::MlpActivation;
using ft::nn::QueryTemperature;
using ft::nn::RouterScore;

// A mixture of experts in place of the dense MLP on some layers (Qwen3-MoE, Mixtral, Llama 4).
struct ExpertLayers {
  std::int64_t num_experts = 0;  // 0: every layer is dense
  std::int64_t top_k = 0;
  std::int64_t expert_dim = 0;         // each expert's MLP width
  std::int64_t shared_expert_dim = 0;  // 0: no shared expert
  RouterScore score = RouterScore::Softmax;
  bool normalize_top_k = false;
  bool weight_expert_inputs = false;  // the routing weight scales the expert's input (Llama 4)
  std::vector<bool> sparse;           // per layer: experts (true) or the dense MLP
  double router_aux_loss_coef = 0;    // weight of the load-balancing loss; 0: none
};

// Which layers attend within the sliding window when one is set: every layer, or layers 0, 2,
// 4, ... with full attention in between.
enum class SlidingWindowLayers { All, EvenIndexed };

struct DecoderConfig {
  std::int64_t vocab_size = 0;
  std::int64_t num_layers = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t embed_dim = 0;
  std::int64_t head_dim = 0;  // 0: embed_dim / num_heads
  std::int64_t intermediate_dim = 0;
  std::int64_t max_seq_len = 0;
  double norm_eps = 1e-5;
  double rope_base = 500000.0;
  std::optional<Llama3RopeScaling> rope_scaling;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;

  // --- Mechanisms some families add (default: none) ---
  bool qk_norm = false;        // an RMSNorm over each head's queries and keys, before RoPE
  bool norm_adds_one = false;  // RMSNorm scales by (1 + weight), weights initialised to 0
  MlpActivation activation = MlpActivation::SiLU;
  bool scale_embeddings = false;     // embeddings times sqrt(embed_dim), rounded to the hidden dtype
  bool post_norms = false;           // attention and MLP outputs normed before the residual add
  double attn_logit_softcap = 0;     // scores -> cap * tanh(scores / cap); 0: none
  double final_logit_softcap = 0;    // the same on the output logits; 0: none
  double query_pre_attn_scalar = 0;  // scores scaled by 1/sqrt(this); 0: 1/sqrt(head_dim)
  std::int64_t sliding_window = 0;   // a query attends to at most this many positions (itself included); 0: all
  SlidingWindowLayers sliding_window_layers = SlidingWindowLayers::All;
  ExpertLayers experts;
  // Llama 4: per layer, whether attention rotates positions (false: no positional embedding,
  // "NoPE"); empty: every layer does. On rotary layers: attention within chunks of
  // attention_chunk_size positions (0: none) and an L2 norm of q and k after the rotation; on the
  // others the query temperature.
  std::vector<bool> rope_layers;
  std::int64_t attention_chunk_size = 0;
  bool qk_l2_norm = false;
  std::optional<QueryTemperature> nope_query_temperature;

  std::int64_t resolved_head_dim() const { return head_dim > 0 ? head_dim : embed_dim / num_heads; }
  double attention_scale() const;
  // The window of layer `layer` (0: full causal attention).
  std::int64_t layer_sliding_window(std::int64_t layer) const;
  bool layer_has_experts(std::int64_t layer) const;
  bool layer_rotates(std::int64_t layer) const;
  // Empty when consistent, else what is wrong (the caller names the config key).
  std::string problem() const;
  // Trainable parameters of the decoder this config builds, counted from the shapes alone (no
  // allocation), as Hugging Face and the model cards count them: a tied output is counted once.
  std::int64_t parameter_count() const;
};

// torchtune's scale_hidden_dim_for_mlp: 2/3 of 4*dim rounded up to a multiple of `multiple_of`.
std::int64_t scale_hidden_dim_for_mlp(std::int64_t dim, std::int64_t multiple_of = 256);

}  // namespace ft_models
