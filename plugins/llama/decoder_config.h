// Architecture of a Llama-family decoder (Llama 2/3/3.1/3.2, Qwen 2/2.5): everything that
// decides parameter shapes and the forward computation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ft_llama {

// Llama 3.1's frequency-dependent RoPE scaling (HF rope_type "llama3").
struct Llama3RopeScaling {
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  std::int64_t original_max_position_embeddings = 8192;
};

struct DecoderConfig {
  std::string family = "llama";  // "llama" or "qwen2": the HF model_type written to config.json
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

  std::int64_t resolved_head_dim() const { return head_dim > 0 ? head_dim : embed_dim / num_heads; }
  // Empty when consistent, else what is wrong (the caller names the config key).
  std::string problem() const;
  // Trainable parameters of the decoder this config builds, counted from the shapes alone (no
  // allocation), as Hugging Face and the model cards count them: a tied output is counted once.
  std::int64_t parameter_count() const;
};

// torchtune's scale_hidden_dim_for_mlp: 2/3 of 4*dim rounded up to a multiple of `multiple_of`.
std::int64_t scale_hidden_dim_for_mlp(std::int64_t dim, std::int64_t multiple_of = 256);

}  // namespace ft_llama
