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

// Qwen 3: Qwen 2's layout without q/k/v biases, with an RMSNorm over each head's queries and keys,
// and 128-wide heads at every size (wider than embed_dim / num_heads for 0.6B, 4B and 32B).
DecoderConfig qwen3_sized(std::int64_t layers, std::int64_t heads, std::int64_t dim, std::int64_t hidden,
                          std::int64_t max_seq_len, bool tied) {
  DecoderConfig c;
  c.family = "qwen3";
  c.vocab_size = 151936;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = 8;
  c.embed_dim = dim;
  c.head_dim = 128;
  c.intermediate_dim = hidden;
  c.max_seq_len = max_seq_len;
  c.norm_eps = 1e-6;
  c.rope_base = 1000000.0;
  c.qk_norm = true;
  c.tie_word_embeddings = tied;
  return c;
}

// Gemma: 256k vocabulary tied to the output, 256-wide heads, GeGLU, (1 + w) norms, embeddings
// scaled by sqrt(dim).
DecoderConfig gemma_sized(std::int64_t layers, std::int64_t heads, std::int64_t kv_heads, std::int64_t dim,
                          std::int64_t hidden) {
  DecoderConfig c;
  c.family = "gemma";
  c.vocab_size = 256000;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.embed_dim = dim;
  c.head_dim = 256;
  c.intermediate_dim = hidden;
  c.max_seq_len = 8192;
  c.norm_eps = 1e-6;
  c.rope_base = 10000.0;
  c.tie_word_embeddings = true;
  c.norm_adds_one = true;
  c.activation = MlpActivation::GeluTanh;
  c.scale_embeddings = true;
  return c;
}

// Gemma 2 adds four norms per layer, soft-capped attention scores (50) and logits (30), and a
// 4096-token sliding window on every other layer. The caps are the published configs' values:
// torchtune's gemma2_2b/9b/27b builders pass them swapped (docs/parity.md).
DecoderConfig gemma2_sized(std::int64_t layers, std::int64_t heads, std::int64_t kv_heads, std::int64_t dim,
                           std::int64_t hidden, std::int64_t head_dim, double query_pre_attn_scalar) {
  DecoderConfig c = gemma_sized(layers, heads, kv_heads, dim, hidden);
  c.family = "gemma2";
  c.head_dim = head_dim;
  c.post_norms = true;
  c.attn_logit_softcap = 50.0;
  c.final_logit_softcap = 30.0;
  c.query_pre_attn_scalar = query_pre_attn_scalar;
  c.sliding_window = 4096;
  c.sliding_window_layers = SlidingWindowLayers::EvenIndexed;
  return c;
}

// Phi-3 and Phi-4: Llama's computation; their checkpoints fuse q/k/v and gate/up (HfLayout).
DecoderConfig phi3_sized(std::int64_t vocab, std::int64_t layers, std::int64_t heads, std::int64_t kv_heads,
                         std::int64_t dim, std::int64_t hidden, std::int64_t max_seq_len, double rope_base,
                         std::int64_t sliding_window) {
  DecoderConfig c;
  c.family = "phi3";
  c.vocab_size = vocab;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.embed_dim = dim;
  c.intermediate_dim = hidden;
  c.max_seq_len = max_seq_len;
  c.norm_eps = 1e-5;
  c.rope_base = rope_base;
  c.sliding_window = sliding_window;
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
  const std::string q = "torchtune.models.qwen2.", q25 = "torchtune.models.qwen2_5.", q3 = "torchtune.models.qwen3.";
  // Mistral 7B v0.1, the checkpoint torchtune's configs name: Llama's layout with grouped-query
  // attention and a 4096-token sliding window (torchtune's builder has no window).
  DecoderConfig mistral_7b = llama2_sized(32, 32, 8, 4096, 14336);
  mistral_7b.family = "mistral";
  mistral_7b.max_seq_len = 32768;
  mistral_7b.sliding_window = 4096;
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
      {"torchtune.models.llama3.llama3_70b", "Llama 3 70B (plain RoPE, 8192 positions)",
       llama3_sized(80, 64, 8192, 28672, 8192, std::nullopt, false)},
      {"torchtune.models.llama3_1.llama3_1_70b", "Llama 3.1 70B (RoPE scale 8)",
       llama3_sized(80, 64, 8192, 28672, 131072, 8.0, false)},
      {"torchtune.models.llama3_3.llama3_3_70b", "Llama 3.3 70B (Llama 3.1 70B's architecture)",
       llama3_sized(80, 64, 8192, 28672, 131072, 8.0, false)},
      {q3 + "qwen3_0_6b_base", "Qwen 3 0.6B base (tied)", qwen3_sized(28, 16, 1024, 3072, 32768, true)},
      {q3 + "qwen3_0_6b_instruct", "Qwen 3 0.6B (tied)", qwen3_sized(28, 16, 1024, 3072, 40960, true)},
      {q3 + "qwen3_1_7b_base", "Qwen 3 1.7B base (tied)", qwen3_sized(28, 16, 2048, 6144, 32768, true)},
      {q3 + "qwen3_1_7b_instruct", "Qwen 3 1.7B (tied)", qwen3_sized(28, 16, 2048, 6144, 40960, true)},
      {q3 + "qwen3_4b_base", "Qwen 3 4B base (tied)", qwen3_sized(36, 32, 2560, 9728, 32768, true)},
      {q3 + "qwen3_4b_instruct", "Qwen 3 4B (tied)", qwen3_sized(36, 32, 2560, 9728, 40960, true)},
      {q3 + "qwen3_8b_base", "Qwen 3 8B base", qwen3_sized(36, 32, 4096, 12288, 32768, false)},
      {q3 + "qwen3_8b_instruct", "Qwen 3 8B", qwen3_sized(36, 32, 4096, 12288, 40960, false)},
      {q3 + "qwen3_14b_base", "Qwen 3 14B base", qwen3_sized(40, 40, 5120, 17408, 32768, false)},
      {q3 + "qwen3_14b_instruct", "Qwen 3 14B", qwen3_sized(40, 40, 5120, 17408, 40960, false)},
      {q3 + "qwen3_32b", "Qwen 3 32B", qwen3_sized(64, 64, 5120, 25600, 40960, false)},
      {"torchtune.models.gemma.gemma_2b", "Gemma 2B (multi-query attention, tied)", gemma_sized(18, 8, 1, 2048, 16384)},
      {"torchtune.models.gemma.gemma_7b", "Gemma 7B (tied)", gemma_sized(28, 16, 16, 3072, 24576)},
      {"torchtune.models.gemma2.gemma2_2b", "Gemma 2 2B (soft caps 50/30, sliding window 4096 on even layers)",
       gemma2_sized(26, 8, 4, 2304, 9216, 256, 256)},
      {"torchtune.models.gemma2.gemma2_9b", "Gemma 2 9B (soft caps 50/30, sliding window 4096 on even layers)",
       gemma2_sized(42, 16, 8, 3584, 14336, 256, 256)},
      {"torchtune.models.gemma2.gemma2_27b", "Gemma 2 27B (soft caps 50/30, sliding window 4096 on even layers)",
       gemma2_sized(46, 32, 16, 4608, 36864, 128, 144)},
      {"torchtune.models.mistral.mistral_7b", "Mistral 7B v0.1 (sliding window 4096)", mistral_7b},
      {"torchtune.models.phi3.phi3_mini", "Phi-3 mini 4k (sliding window 2047; fused q/k/v and gate/up on disk)",
       phi3_sized(32064, 32, 32, 32, 3072, 8192, 4096, 10000.0, 2047)},
      {"torchtune.models.phi4.phi4_14b", "Phi-4 14B (RoPE theta 250000; fused q/k/v and gate/up on disk)",
       phi3_sized(100352, 40, 40, 10, 5120, 17920, 16384, 250000.0, 0)},
  };
}

}  // namespace

const std::vector<NamedModelSize>& named_model_sizes() {
  static const std::vector<NamedModelSize> sizes = all_sizes();
  return sizes;
}

}  // namespace ft_llama
