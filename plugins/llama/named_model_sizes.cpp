// Hyper-parameters as torchtune's _model_builders.py files set them, family by family.
#include "named_model_sizes.h"

namespace ft_llama {

namespace {

// Llama 2: 32k SentencePiece vocabulary, plain RoPE with theta 10000, 4096 positions.
DecoderConfig llama2_sized(std::int64_t layers, std::int64_t heads, std::int64_t kv_heads, std::int64_t dim,
                           std::int64_t hidden) {
  DecoderConfig c;
  c.family = "llama";
  c.vocab_size = 32000;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.embed_dim = dim;
  c.intermediate_dim = hidden;
  c.max_seq_len = 4096;
  c.norm_eps = 1e-5;
  c.rope_base = 10000.0;
  return c;
}

// Llama 3 / 3.1 / 3.2: 128k tiktoken vocabulary, 8 key/value heads, RoPE theta 500000; 3.1 and 3.2
// add the frequency-dependent RoPE scaling (`scale_factor`) and 128k positions.
DecoderConfig llama3_sized(std::int64_t layers, std::int64_t heads, std::int64_t dim, std::int64_t hidden,
                           std::int64_t max_seq_len, std::optional<double> scale_factor, bool tied) {
  DecoderConfig c;
  c.family = "llama";
  c.vocab_size = 128256;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = 8;
  c.embed_dim = dim;
  c.intermediate_dim = hidden;
  c.max_seq_len = max_seq_len;
  c.norm_eps = 1e-5;
  c.rope_base = 500000.0;
  if (scale_factor) c.rope_scaling = Llama3RopeScaling{*scale_factor, 1.0, 4.0, 8192};
  c.tie_word_embeddings = tied;
  return c;
}

// Qwen 2 and Qwen 2.5 share the architecture (q/k/v biases, RoPE theta 1e6, RMSNorm eps 1e-6);
// the small sizes tie the output to the embedding, the 7B sizes have a 152064-entry vocabulary.
DecoderConfig qwen2_sized(std::int64_t vocab, std::int64_t layers, std::int64_t heads, std::int64_t kv_heads,
                          std::int64_t dim, std::int64_t hidden, std::int64_t max_seq_len, bool tied) {
  DecoderConfig c;
  c.family = "qwen2";
  c.vocab_size = vocab;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.embed_dim = dim;
  c.intermediate_dim = hidden;
  c.max_seq_len = max_seq_len;
  c.norm_eps = 1e-6;
  c.rope_base = 1000000.0;
  c.qkv_bias = true;
  c.tie_word_embeddings = tied;
  return c;
}

std::vector<NamedModelSize> all_sizes() {
  const DecoderConfig qwen_0_5b = qwen2_sized(151936, 24, 14, 2, 896, 4864, 32768, true);
  const DecoderConfig qwen_1_5b = qwen2_sized(151936, 28, 12, 2, 1536, 8960, 32768, true);
  const DecoderConfig qwen_7b = qwen2_sized(152064, 28, 28, 4, 3584, 18944, 32768, false);
  DecoderConfig qwen_1_5b_base = qwen_1_5b;
  qwen_1_5b_base.max_seq_len = 131072;
  DecoderConfig qwen_7b_base = qwen_7b;
  qwen_7b_base.max_seq_len = 131072;
  const std::string q = "torchtune.models.qwen2.", q25 = "torchtune.models.qwen2_5.";
  return {
      {"torchtune.models.llama2.llama2_7b", "Llama 2 7B (multi-head attention, RoPE theta 10000)",
       llama2_sized(32, 32, 32, 4096, 11008)},
      {"torchtune.models.llama2.llama2_13b", "Llama 2 13B (multi-head attention, RoPE theta 10000)",
       llama2_sized(40, 40, 40, 5120, 13824)},
      {"torchtune.models.llama3.llama3_8b", "Llama 3 8B (plain RoPE, 8192 positions)",
       llama3_sized(32, 32, 4096, 14336, 8192, std::nullopt, false)},
      {"torchtune.models.llama3_1.llama3_1_8b", "Llama 3.1 8B (RoPE scale 8)",
       llama3_sized(32, 32, 4096, 14336, 131072, 8.0, false)},
      {"torchtune.models.llama3_2.llama3_2_1b", "Llama 3.2 1B (tied, RoPE scale 32)",
       llama3_sized(16, 32, 2048, 8192, 131072, 32.0, true)},
      {"torchtune.models.llama3_2.llama3_2_3b", "Llama 3.2 3B (tied, RoPE scale 32)",
       llama3_sized(28, 24, 3072, 8192, 131072, 32.0, true)},
      {q + "qwen2_0_5b", "Qwen 2 0.5B (tied)", qwen_0_5b},
      {q + "qwen2_1_5b", "Qwen 2 1.5B (tied)", qwen_1_5b},
      {q + "qwen2_7b", "Qwen 2 7B", qwen_7b},
      {q25 + "qwen2_5_0_5b", "Qwen 2.5 0.5B (tied)", qwen_0_5b},
      {q25 + "qwen2_5_1_5b", "Qwen 2.5 1.5B Instruct (tied; fthost's name for qwen2_5_1_5b_instruct)", qwen_1_5b},
      {q25 + "qwen2_5_1_5b_base", "Qwen 2.5 1.5B base (tied, 131072 positions)", qwen_1_5b_base},
      {q25 + "qwen2_5_1_5b_instruct", "Qwen 2.5 1.5B Instruct (tied)", qwen_1_5b},
      {q25 + "qwen2_5_3b", "Qwen 2.5 3B (tied)", qwen2_sized(151936, 36, 16, 2, 2048, 11008, 32768, true)},
      {q25 + "qwen2_5_7b_base", "Qwen 2.5 7B base (131072 positions)", qwen_7b_base},
      {q25 + "qwen2_5_7b_instruct", "Qwen 2.5 7B Instruct", qwen_7b},
  };
}

}  // namespace

const std::vector<NamedModelSize>& named_model_sizes() {
  static const std::vector<NamedModelSize> sizes = all_sizes();
  return sizes;
}

}  // namespace ft_llama
