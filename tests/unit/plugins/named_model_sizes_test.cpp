// torchtune's named model sizes (plugins/llama/named_model_sizes.cpp) against the parameter counts
// the model publishers state (Hugging Face model cards / safetensors metadata), counted from the
// shapes without allocating the weights; the shape-based count itself is checked against the
// parameters a constructed decoder really allocates; and every named size is a component of the
// built ft_llama plugin.
#include "named_model_sizes.h"
#include <ft/nn/parameter_device.h>
#include "decoder_builder.h"
#include "test_helpers.h"

#include <map>

namespace {

using ft_llama::DecoderConfig;
using ft_llama::named_model_sizes;

// Published totals, e.g. Llama 3 8B = 8,030,261,248 (Meta's model card rounds it to 8.03B).
const std::map<std::string, std::int64_t> kPublishedParameters = {
    {"torchtune.models.llama2.llama2_7b", 6738415616},
    {"torchtune.models.llama2.llama2_13b", 13015864320},
    {"torchtune.models.llama3.llama3_8b", 8030261248},
    {"torchtune.models.llama3_1.llama3_1_8b", 8030261248},
    {"torchtune.models.llama3_2.llama3_2_1b", 1235814400},
    {"torchtune.models.llama3_2.llama3_2_3b", 3212749824},
    {"torchtune.models.qwen2.qwen2_0_5b", 494032768},
    {"torchtune.models.qwen2.qwen2_1_5b", 1543714304},
    {"torchtune.models.qwen2.qwen2_7b", 7615616512},
    {"torchtune.models.qwen2_5.qwen2_5_0_5b", 494032768},
    {"torchtune.models.qwen2_5.qwen2_5_1_5b", 1543714304},
    {"torchtune.models.qwen2_5.qwen2_5_1_5b_base", 1543714304},
    {"torchtune.models.qwen2_5.qwen2_5_1_5b_instruct", 1543714304},
    {"torchtune.models.qwen2_5.qwen2_5_3b", 3085938688},
    {"torchtune.models.qwen2_5.qwen2_5_7b_base", 7615616512},
    {"torchtune.models.qwen2_5.qwen2_5_7b_instruct", 7615616512},
    {"torchtune.models.llama3.llama3_70b", 70553706496},
    {"torchtune.models.llama3_1.llama3_1_70b", 70553706496},
    {"torchtune.models.llama3_3.llama3_3_70b", 70553706496},
    // Qwen 3: the Hub's counts of the stored tensors; 1.7B's checkpoint also stores its tied
    // lm_head (2,031,739,904 with it), its model card's 1.7B is without.
    {"torchtune.models.qwen3.qwen3_0_6b_base", 596049920},
    {"torchtune.models.qwen3.qwen3_0_6b_instruct", 596049920},
    {"torchtune.models.qwen3.qwen3_1_7b_base", 1720574976},
    {"torchtune.models.qwen3.qwen3_1_7b_instruct", 1720574976},
    {"torchtune.models.qwen3.qwen3_4b_base", 4022468096},
    {"torchtune.models.qwen3.qwen3_4b_instruct", 4022468096},
    {"torchtune.models.qwen3.qwen3_8b_base", 8190735360},
    {"torchtune.models.qwen3.qwen3_8b_instruct", 8190735360},
    {"torchtune.models.qwen3.qwen3_14b_base", 14768307200},
    {"torchtune.models.qwen3.qwen3_14b_instruct", 14768307200},
    {"torchtune.models.qwen3.qwen3_32b", 32762123264},
    {"torchtune.models.gemma.gemma_2b", 2506172416},
    {"torchtune.models.gemma.gemma_7b", 8537680896},
    {"torchtune.models.gemma2.gemma2_2b", 2614341888},
    {"torchtune.models.gemma2.gemma2_9b", 9241705984},
    {"torchtune.models.gemma2.gemma2_27b", 27227128320},
    {"torchtune.models.mistral.mistral_7b", 7241732096},
    {"torchtune.models.phi3.phi3_mini", 3821079552},
    {"torchtune.models.phi4.phi4_14b", 14659507200},
};

const ft_llama::NamedModelSize& named(const std::string& component) {
  for (const auto& size : named_model_sizes())
    if (size.component == component) return size;
  throw std::runtime_error("no named size " + component);
}

TEST(NamedModelSizes, ParameterCountsMatchThePublishedSizes) {
  for (const auto& size : named_model_sizes()) {
    EXPECT_EQ(size.config.problem(), "") << size.component;
    auto published = kPublishedParameters.find(size.component);
    ASSERT_NE(published, kPublishedParameters.end()) << size.component << ": add its published parameter count";
    EXPECT_EQ(size.config.parameter_count(), published->second) << size.component;
  }
  EXPECT_EQ(named_model_sizes().size(), kPublishedParameters.size());
}

// What parameter counts cannot see, from the models' published config.json files.
TEST(NamedModelSizes, PositionsRopeAndNormsAsPublished) {
  for (const char* name : {"torchtune.models.llama2.llama2_7b", "torchtune.models.llama2.llama2_13b"}) {
    const DecoderConfig& c = named(name).config;
    EXPECT_EQ(c.num_kv_heads, c.num_heads) << name << ": Llama 2 7B/13B use multi-head attention";
    EXPECT_EQ(c.rope_base, 10000.0) << name;
    EXPECT_FALSE(c.rope_scaling) << name;
    EXPECT_EQ(c.max_seq_len, 4096) << name;
    EXPECT_EQ(c.vocab_size, 32000) << name;
    EXPECT_EQ(c.norm_eps, 1e-5) << name;
  }
  const DecoderConfig& llama3 = named("torchtune.models.llama3.llama3_8b").config;
  EXPECT_FALSE(llama3.rope_scaling);
  EXPECT_EQ(llama3.rope_base, 500000.0);
  EXPECT_EQ(llama3.max_seq_len, 8192);
  const DecoderConfig& llama31 = named("torchtune.models.llama3_1.llama3_1_8b").config;
  ASSERT_TRUE(llama31.rope_scaling);
  EXPECT_EQ(llama31.rope_scaling->factor, 8.0);
  EXPECT_EQ(llama31.max_seq_len, 131072);
  const DecoderConfig& llama32 = named("torchtune.models.llama3_2.llama3_2_3b").config;
  ASSERT_TRUE(llama32.rope_scaling);
  EXPECT_EQ(llama32.rope_scaling->factor, 32.0);
  for (const auto& size : named_model_sizes()) {
    if (size.config.family != "qwen2") continue;
    EXPECT_TRUE(size.config.qkv_bias) << size.component;
    EXPECT_EQ(size.config.rope_base, 1000000.0) << size.component;
    EXPECT_EQ(size.config.norm_eps, 1e-6) << size.component;
    const bool base = size.component.size() > 5 && size.component.compare(size.component.size() - 5, 5, "_base") == 0;
    EXPECT_EQ(size.config.max_seq_len, base ? 131072 : 32768) << size.component;
    EXPECT_EQ(size.config.tie_word_embeddings, size.config.vocab_size == 151936) << size.component;
  }
}

// The newer families' architecture switches, from their published config.json files.
TEST(NamedModelSizes, NewFamiliesAsPublished) {
  for (const auto& size : named_model_sizes()) {
    const DecoderConfig& c = size.config;
    SCOPED_TRACE(size.component);
    if (c.family == "qwen3") {
      EXPECT_TRUE(c.qk_norm);
      EXPECT_FALSE(c.qkv_bias);
      EXPECT_EQ(c.resolved_head_dim(), 128);
    } else if (c.family == "gemma" || c.family == "gemma2") {
      EXPECT_TRUE(c.norm_adds_one && c.scale_embeddings && c.tie_word_embeddings);
      EXPECT_EQ(c.activation, ft::nn::MlpActivation::GeluTanh);
      EXPECT_EQ(c.post_norms, c.family == "gemma2");
      if (c.family == "gemma2") {
        // Gemma 2's config.json: attn_logit_softcapping 50, final_logit_softcapping 30 (torchtune's
        // named builders pass them the other way round).
        EXPECT_EQ(c.attn_logit_softcap, 50.0);
        EXPECT_EQ(c.final_logit_softcap, 30.0);
        EXPECT_EQ(c.sliding_window, 4096);
        EXPECT_EQ(c.layer_sliding_window(0), 4096);
        EXPECT_EQ(c.layer_sliding_window(1), 0);
      }
    } else if (c.family == "mistral") {
      EXPECT_EQ(c.sliding_window, 4096);
      EXPECT_EQ(c.max_seq_len, 32768);
    }
  }
  EXPECT_DOUBLE_EQ(named("torchtune.models.gemma2.gemma2_27b").config.attention_scale(), 1.0 / 12.0);
  EXPECT_DOUBLE_EQ(named("torchtune.models.gemma2.gemma2_9b").config.attention_scale(), 1.0 / 16.0);
  EXPECT_EQ(named("torchtune.models.phi4.phi4_14b").config.rope_base, 250000.0);
  EXPECT_EQ(named("torchtune.models.phi3.phi3_mini").config.sliding_window, 2047);
}

std::int64_t allocated_parameters(const DecoderConfig& config) {
  ft::nn::TransformerDecoder decoder = ft_llama::build_decoder(config);
  std::int64_t total = 0;
  for (const auto& p : decoder->parameters()) total += p.numel();
  return total;
}

// The meta device builds a decoder of any size from its shapes: 70B counted without a weight.
TEST(NamedModelSizes, MetaDeviceBuildsTheLargestSizesWithoutAllocating) {
  for (const auto& size : named_model_sizes()) {
    ft::nn::MetaParameters on_meta;
    ft::nn::TransformerDecoder decoder = ft_llama::build_decoder(size.config);
    EXPECT_TRUE(decoder->tok_embeddings.is_meta()) << size.component;
    EXPECT_EQ(ft::nn::count_parameters(*decoder), size.config.parameter_count()) << size.component;
  }
}

// The count from shapes equals what the decoder allocates: tied and untied, with and without
// q/k/v biases, grouped-query and multi-head, and an explicit head_dim wider than embed_dim / heads.
TEST(NamedModelSizes, ShapeCountEqualsAllocatedParameters) {
  DecoderConfig c;
  c.vocab_size = 97;
  c.num_layers = 3;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.embed_dim = 32;
  c.intermediate_dim = 72;
  c.max_seq_len = 16;
  for (bool tied : {false, true}) {
    for (bool bias : {false, true}) {
      for (std::int64_t kv : {2, 4}) {
        for (std::int64_t head_dim : {0, 12}) {
          c.tie_word_embeddings = tied;
          c.qkv_bias = bias;
          c.num_kv_heads = kv;
          c.head_dim = head_dim;
          EXPECT_EQ(c.parameter_count(), allocated_parameters(c))
              << "tied " << tied << " bias " << bias << " kv " << kv << " head_dim " << head_dim;
          // Qwen 3's q/k norms and Gemma 2's post norms add parameters too.
          DecoderConfig extended = c;
          extended.qk_norm = true;
          extended.post_norms = true;
          EXPECT_EQ(extended.parameter_count(), allocated_parameters(extended));
        }
      }
    }
  }
}

TEST(NamedModelSizes, EveryNamedSizeIsAComponentOfThePlugin) {
  auto r = fttest::run_fthost("ls model -v");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const auto& size : named_model_sizes())
    EXPECT_NE(r.output.find(size.component + " "), std::string::npos) << size.component << "\n" << r.output;
  EXPECT_NE(r.output.find("8,030,261,248 parameters"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("torchtune.models.llama2.llama2 "), std::string::npos) << r.output;
}

}  // namespace
