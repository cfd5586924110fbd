// The model family plugins' builders through the registry: configs the Llama architecture cannot take are
// refused with the offending key (checked against the architecture's own constraints, e.g. query
// heads a multiple of key/value heads), and forward's output shapes follow from the input and
// the requested chunking.
#include "builtin_plugins.h"
#include "tiny_llama.h"

#include <ft/model.h>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

namespace {

class LlamaModel : public fttest::BuiltinPluginsTest {
 protected:
  static std::string model_error(const std::string& text) {
    auto cfg = root(text);
    return fttest::error_of([&] { registry().instantiate<ft::Model>(cfg.table("model")); });
  }
};

std::string with(const std::string& base, const std::string& extra) { return base + extra + "\n"; }

// A batch of token ids with the default positions (0..s-1) and causal mask.
ft::ModelInput tokens_only(torch::Tensor tokens) {
  ft::ModelInput input;
  input.tokens = std::move(tokens);
  return input;
}

TEST_F(LlamaModel, ModelBuildersNameTheInconsistentKey) {
  std::string no_layers = fttest::kTinyLlamaConfig;
  no_layers.replace(no_layers.find("num_layers = 1"), 14, "num_layers = 0");
  EXPECT_NE(model_error(no_layers).find("num_layers must be positive"), std::string::npos);
  const std::string heads = R"(
[model]
_component_ = "torchtune.models.llama3.llama3"
vocab_size = 64
num_layers = 1
num_heads = 3
num_kv_heads = 2
embed_dim = 32
max_seq_len = 16
)";
  EXPECT_NE(model_error(heads).find("num_heads (3) must be a multiple of num_kv_heads (2)"), std::string::npos);
  EXPECT_NE(model_error(with(fttest::kTinyLlamaConfig, "attn_dropout = 0.1")).find("model.attn_dropout"),
            std::string::npos);
  EXPECT_NE(model_error(with(fttest::kTinyLlamaConfig, "vocab = 3")).find("model.vocab: unknown key"),
            std::string::npos);
}

TEST_F(LlamaModel, HfConfigBuilderNamesTheJsonField) {
  auto config_json = [](const std::string& body) {
    return "[model]\n_component_ = \"fthost.models.from_hf_config\"\npath = \"" +
           fttest::write_temp("config.json", body) + "\"\n";
  };
  const std::string llama = R"({"model_type": "llama", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 64,
    "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 16,
    "rms_norm_eps": 1e-5, "rope_theta": 10000.0)";
  EXPECT_NE(model_error(config_json(R"({"model_type": "gpt2"})")).find("\"gpt2\": not a supported architecture"),
            std::string::npos);
  EXPECT_NE(model_error(config_json(R"({"model_type": "qwen2_vl"})")).find("multimodal models are not supported"),
            std::string::npos);
  EXPECT_NE(model_error(config_json(R"({"model_type": "qwen2_moe"})")).find("mixture-of-experts"), std::string::npos);
  EXPECT_NE(model_error(config_json(llama + R"(, "hidden_act": "gelu"})"))
                .find("\"hidden_act\": \"gelu\" is not supported for llama (silu)"),
            std::string::npos);
  EXPECT_NE(model_error(config_json(llama + R"(, "sliding_window": 8})")).find("Llama has no sliding window"),
            std::string::npos);
  std::string gemma2 = llama;
  gemma2.replace(gemma2.find("\"llama\""), 7, "\"gemma2\"");
  EXPECT_NE(model_error(config_json(gemma2 + R"(, "layer_types": ["full_attention"]})"))
                .find("fthost's Gemma 2 slides on the even-numbered layers only"),
            std::string::npos);
  EXPECT_NE(
      model_error(config_json(llama + R"(, "hidden_size": "wide"})")).find("\"hidden_size\": expected an integer"),
      std::string::npos);
  EXPECT_NE(model_error(config_json("{not json")).find("not valid JSON"), std::string::npos);
  auto model = registry().instantiate<ft::Model>(root(config_json(llama + "}")).table("model"));
  EXPECT_EQ(model->vocab_size(), 64);
}

// Values Hugging Face's classes would not build are refused, naming the key; null takes a default
// only where Hugging Face's configuration class turns None into one. The rules per family are
// those of transformers' modeling and configuration files (head_dim: Llama and Mistral derive it
// from null, Mistral from 0 too; Qwen 3 defaults to 128 and Gemma to 256 when it is absent).
TEST_F(LlamaModel, HfConfigBuilderRefusesValuesHuggingFaceWouldNotBuild) {
  auto config_json = [](const std::string& body) {
    return "[model]\n_component_ = \"fthost.models.from_hf_config\"\npath = \"" +
           fttest::write_temp("config.json", body) + "\"\n";
  };
  auto of_type = [](const std::string& model_type, const std::string& extra) {
    return R"({"model_type": ")" + model_type + R"(", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 64,
      "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 16,
      "rope_theta": 10000.0)" +
           extra + "}";
  };
  auto built = [&](const std::string& body) {
    return registry().instantiate<ft::Model>(root(config_json(body)).table("model"));
  };
  auto head_dim_of = [&](const std::string& body) {
    return nlohmann::json::parse(built(body)->hf_config_json()).at("head_dim").get<std::int64_t>();
  };
  EXPECT_NE(model_error(config_json(of_type("qwen2", R"(, "head_dim": 0)"))).find("\"head_dim\": expected a positive"),
            std::string::npos);
  EXPECT_NE(model_error(config_json(of_type("llama", R"(, "head_dim": 9223372036854775808)")))
                .find("\"head_dim\": 9223372036854775808 is out of range"),
            std::string::npos);
  EXPECT_NE(model_error(config_json(of_type("llama", R"(, "rms_norm_eps": null)")))
                .find("\"rms_norm_eps\": null is not valid here"),
            std::string::npos);
  EXPECT_NE(model_error(config_json(of_type("qwen3", R"(, "head_dim": null)"))).find("\"head_dim\": null is not valid"),
            std::string::npos);
  EXPECT_NE(model_error(config_json(of_type("llama", R"(, "rms_norm_eps": -1e-5)"))).find("\"rms_norm_eps\": must be"),
            std::string::npos);
  EXPECT_EQ(head_dim_of(of_type("llama", R"(, "head_dim": null)")), 8);
  EXPECT_EQ(head_dim_of(of_type("mistral", R"(, "head_dim": 0)")), 8);
  EXPECT_EQ(head_dim_of(of_type("qwen2", "")), 8);
  EXPECT_EQ(head_dim_of(of_type("qwen3", "")), 128);
  EXPECT_EQ(head_dim_of(of_type("qwen3", R"(, "head_dim": 12)")), 12);
}

TEST_F(LlamaModel, ForwardRejectsTokensTheModelCannotEmbed) {
  auto model = registry().instantiate<ft::Model>(root(fttest::kTinyLlamaConfig).table("model"));
  auto too_big = torch::tensor({{1, 2, 64}}, torch::kLong);
  EXPECT_NE(fttest::error_of([&] {
              model->forward(tokens_only(too_big));
            }).find("token id 64 is outside the vocabulary [0, 64)"),
            std::string::npos);
  auto too_long = torch::zeros({1, 17}, torch::kLong);
  EXPECT_NE(fttest::error_of([&] { model->forward(tokens_only(too_long)); }).find("exceeds max_seq_len 16"),
            std::string::npos);
  auto out = model->forward(tokens_only(torch::zeros({2, 5}, torch::kLong)), {2, false});
  ASSERT_EQ(out.logits.size(), 2u);
  EXPECT_EQ(out.logits[0].sizes(), (std::vector<int64_t>{2, 3, 64}));
  EXPECT_EQ(out.logits[1].sizes(), (std::vector<int64_t>{2, 2, 64}));
}

// torchtune's llama2 builder: plain RoPE with theta 10000 and its default MLP width
// (scale_hidden_dim_for_mlp: 2/3 of 4 x 256 = 682.7, rounded up to a multiple of 256 = 768).
TEST_F(LlamaModel, Llama2BuilderHasPlainRopeAndTorchtunesMlpWidth) {
  auto cfg = root(R"(
[model]
_component_ = "torchtune.models.llama2.llama2"
vocab_size = 64
num_layers = 1
num_heads = 4
num_kv_heads = 4
embed_dim = 256
max_seq_len = 16
)");
  auto model = registry().instantiate<ft::Model>(cfg.table("model"));
  const auto json = nlohmann::json::parse(model->hf_config_json());
  EXPECT_EQ(json.at("rope_theta").get<double>(), 10000.0);
  EXPECT_TRUE(json.at("rope_scaling").is_null());
  EXPECT_EQ(json.at("intermediate_size").get<std::int64_t>(), 768);
  EXPECT_EQ(json.at("num_key_value_heads").get<std::int64_t>(), 4);
  EXPECT_EQ(json.at("rms_norm_eps").get<double>(), 1e-5);
}

}  // namespace
