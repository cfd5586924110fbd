// torchtune's named model sizes, as the model family plugins (plugins/models/*) register them,
// against the parameter counts the model publishers state (Hugging Face model cards / safetensors
// metadata): built on the meta device, so 70B is counted without a weight allocated, and the
// count `fthost ls model -v` gives from the shapes. What counts cannot see (positions, RoPE,
// norms, windows, soft caps) is checked in the config.json each model writes, against the
// published config.json files.
#include "builtin_plugins.h"
#include "test_helpers.h"

#include <ft/model.h>
#include <ft/nn/parameter_device.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>

namespace {

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
    // The safetensors totals of the published checkpoints.
    {"fthost.models.mixtral.mixtral_8x7b", 46702792704},
    {"fthost.models.mixtral.mixtral_8x22b", 140630071296},
    {"fthost.models.qwen3_moe.qwen3_30b_a3b", 30532122624},
    {"fthost.models.qwen3_moe.qwen3_235b_a22b", 235093634560},
    // Llama 4 Scout and Maverick with their vision tower (Meta publishes 109B and 400B): the language
    // models as transformers' Llama4ForCausalLM builds them from the published text_config
    // (107,769,861,120 and 400,711,848,960), plus its Llama4VisionModel and projector from the
    // published vision_config (871,932,416).
    {"torchtune.models.llama4.llama4_scout_17b_16e", 108641793536},
    {"torchtune.models.llama4.llama4_maverick_17b_128e", 401583781376},
};

class NamedModelSizes : public fttest::BuiltinPluginsTest {
 protected:
  static std::shared_ptr<ft::Model> on_meta(const std::string& component) {
    return registry().instantiate<ft::Model>(root("[model]\n_component_ = \"" + component + "\"\n").table("model"),
                                             ft::Model::Args{at::kFloat, c10::Device(c10::kMeta), 0});
  }
  static nlohmann::json hf_config(const std::string& component) {
    return nlohmann::json::parse(on_meta(component)->hf_config_json());
  }
  static bool has_hf_parameter(const std::string& component, const std::string& name) {
    for (const auto& p : on_meta(component)->hf_parameters())
      if (p.name == name) return true;
    return false;
  }
};

// "8030261248" -> "8,030,261,248"
std::string with_thousands_separators(std::int64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

TEST_F(NamedModelSizes, ParameterCountsMatchThePublishedSizes) {
  for (const auto& [component, published] : kPublishedParameters) {
    const auto model = on_meta(component);
    EXPECT_TRUE(model->output_weight().is_meta()) << component;
    EXPECT_EQ(ft::nn::count_parameters(model->module()), published) << component;
  }
  // Every registered builder without keys is a named size with a published count.
  for (const ft::ComponentInfo* info : registry().list(ft::Kind::Model)) {
    if (info->schema.keys().empty() && starts_with(info->name, "torchtune.models.")) {
      EXPECT_TRUE(kPublishedParameters.count(info->name)) << info->name << ": add its published parameter count";
    }
  }
}

TEST_F(NamedModelSizes, ListedCountsAreThePublishedSizes) {
  auto r = fttest::run_fthost("ls model -v");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const auto& [component, published] : kPublishedParameters) {
    const std::size_t at = r.output.find(component + " ");
    ASSERT_NE(at, std::string::npos) << component << "\n" << r.output;
    // The name and library, then the summary on the next line.
    const std::string line = r.output.substr(at, r.output.find('\n', r.output.find('\n', at) + 1) - at);
    EXPECT_NE(line.find(with_thousands_separators(published) + " parameters"), std::string::npos) << line;
  }
  EXPECT_NE(r.output.find("torchtune.models.llama2.llama2 "), std::string::npos) << r.output;
}

// What parameter counts cannot see, from the models' published config.json files.
TEST_F(NamedModelSizes, PositionsRopeAndNormsAsPublished) {
  for (const char* name : {"torchtune.models.llama2.llama2_7b", "torchtune.models.llama2.llama2_13b"}) {
    const nlohmann::json c = hf_config(name);
    EXPECT_EQ(c["num_key_value_heads"], c["num_attention_heads"])
        << name << ": Llama 2 7B/13B use multi-head attention";
    EXPECT_EQ(c["rope_theta"], 10000.0) << name;
    EXPECT_TRUE(c["rope_scaling"].is_null()) << name;
    EXPECT_EQ(c["max_position_embeddings"], 4096) << name;
    EXPECT_EQ(c["vocab_size"], 32000) << name;
    EXPECT_EQ(c["rms_norm_eps"], 1e-5) << name;
  }
  const nlohmann::json llama3 = hf_config("torchtune.models.llama3.llama3_8b");
  EXPECT_TRUE(llama3["rope_scaling"].is_null());
  EXPECT_EQ(llama3["rope_theta"], 500000.0);
  EXPECT_EQ(llama3["max_position_embeddings"], 8192);
  const nlohmann::json llama31 = hf_config("torchtune.models.llama3_1.llama3_1_8b");
  EXPECT_EQ(llama31["rope_scaling"]["factor"], 8.0);
  EXPECT_EQ(llama31["rope_scaling"]["rope_type"], "llama3");
  EXPECT_EQ(llama31["max_position_embeddings"], 131072);
  EXPECT_EQ(hf_config("torchtune.models.llama3_2.llama3_2_3b")["rope_scaling"]["factor"], 32.0);
  for (const auto& [name, count] : kPublishedParameters) {
    if (!starts_with(name, "torchtune.models.qwen2")) continue;
    const nlohmann::json c = hf_config(name);
    EXPECT_EQ(c["model_type"], "qwen2") << name;
    EXPECT_TRUE(has_hf_parameter(name, "model.layers.0.self_attn.q_proj.bias")) << name;
    EXPECT_EQ(c["rope_theta"], 1000000.0) << name;
    EXPECT_EQ(c["rms_norm_eps"], 1e-6) << name;
    const bool base = name.size() > 5 && name.compare(name.size() - 5, 5, "_base") == 0;
    EXPECT_EQ(c["max_position_embeddings"], base ? 131072 : 32768) << name;
    EXPECT_EQ(c["tie_word_embeddings"], c["vocab_size"] == 151936) << name;
  }
}

// The newer families' mechanisms, from their published config.json files.
TEST_F(NamedModelSizes, NewFamiliesAsPublished) {
  for (const auto& [name, count] : kPublishedParameters) {
    SCOPED_TRACE(name);
    if (starts_with(name, "torchtune.models.qwen3.")) {
      EXPECT_EQ(hf_config(name)["head_dim"], 128);
      EXPECT_TRUE(has_hf_parameter(name, "model.layers.0.self_attn.q_norm.weight"));
      EXPECT_FALSE(has_hf_parameter(name, "model.layers.0.self_attn.q_proj.bias"));
    } else if (starts_with(name, "torchtune.models.gemma")) {
      const nlohmann::json c = hf_config(name);
      EXPECT_EQ(c["tie_word_embeddings"], true);
      EXPECT_EQ(c["hidden_activation"], "gelu_pytorch_tanh");
      const bool gemma2 = starts_with(name, "torchtune.models.gemma2.");
      EXPECT_EQ(has_hf_parameter(name, "model.layers.0.pre_feedforward_layernorm.weight"), gemma2);
      if (gemma2) {
        // Gemma 2's config.json: attn_logit_softcapping 50, final_logit_softcapping 30 (torchtune's
        // named builders pass them the other way round).
        EXPECT_EQ(c["attn_logit_softcapping"], 50.0);
        EXPECT_EQ(c["final_logit_softcapping"], 30.0);
        EXPECT_EQ(c["sliding_window"], 4096);
      }
    }
  }
  EXPECT_EQ(hf_config("torchtune.models.gemma2.gemma2_27b")["query_pre_attn_scalar"], 144.0);
  EXPECT_EQ(hf_config("torchtune.models.gemma2.gemma2_9b")["query_pre_attn_scalar"], 256.0);
  EXPECT_EQ(hf_config("torchtune.models.mistral.mistral_7b")["sliding_window"], 4096);
  EXPECT_EQ(hf_config("torchtune.models.mistral.mistral_7b")["max_position_embeddings"], 32768);
  EXPECT_EQ(hf_config("torchtune.models.phi4.phi4_14b")["rope_theta"], 250000.0);
  EXPECT_EQ(hf_config("torchtune.models.phi3.phi3_mini")["sliding_window"], 2047);
  EXPECT_TRUE(has_hf_parameter("torchtune.models.phi3.phi3_mini", "model.layers.0.self_attn.qkv_proj.weight"));
}

// The meta device builds what the CPU allocates: the same parameters, shapes and count.
TEST_F(NamedModelSizes, MetaAndCpuBuildsHaveTheSameParameters) {
  const std::string tiny = R"(
[model]
_component_ = "torchtune.models.gemma2.gemma2"
vocab_size = 97
num_layers = 3
num_heads = 4
head_dim = 12
num_kv_heads = 2
embed_dim = 32
intermediate_dim = 72
max_seq_len = 16
)";
  auto meta = registry().instantiate<ft::Model>(root(tiny).table("model"),
                                                ft::Model::Args{at::kFloat, c10::Device(c10::kMeta), 0});
  auto cpu = registry().instantiate<ft::Model>(root(tiny).table("model"));
  const auto meta_params = meta->module().named_parameters();
  const auto cpu_params = cpu->module().named_parameters();
  ASSERT_EQ(meta_params.size(), cpu_params.size());
  for (std::size_t i = 0; i < cpu_params.size(); ++i) {
    EXPECT_EQ(meta_params[i].key(), cpu_params[i].key());
    EXPECT_EQ(meta_params[i].value().sizes(), cpu_params[i].value().sizes()) << cpu_params[i].key();
    EXPECT_TRUE(meta_params[i].value().is_meta());
  }
  EXPECT_EQ(ft::nn::count_parameters(meta->module()), ft::nn::count_parameters(cpu->module()));
}

}  // namespace
