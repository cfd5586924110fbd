#include "torchtune_builders.h"

namespace ft_models {

// "8030261248" -> "8,030,261,248"
std::string with_thousands_separators(std::int64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

ft::Schema common_schema(const std::string& rope_base_default, const std::string& norm_eps_default, HeadDimKey head_dim,
                         TieKey tie) {
  using ft::ValueType;
  ft::Schema s;
  s.required("vocab_size", ValueType::Int, "number of token embeddings")
      .required("num_layers", ValueType::Int, "transformer layers")
      .required("num_heads", ValueType::Int, "query heads");
  if (head_dim == HeadDimKey::Required) s.required("head_dim", ValueType::Int, "per-head width");
  s.required("num_kv_heads", ValueType::Int, "key/value heads (grouped-query attention)")
      .required("embed_dim", ValueType::Int, "model width")
      .required("max_seq_len", ValueType::Int, "longest sequence the model accepts");
  if (head_dim == HeadDimKey::Optional)
    s.optional("head_dim", ValueType::Int, "", "per-head width (default embed_dim / num_heads)");
  s.optional("attn_dropout", ValueType::Float, "0.0", "attention dropout (only 0.0)")
      .optional("norm_eps", ValueType::Float, norm_eps_default, "RMSNorm epsilon")
      .optional("rope_base", ValueType::Float, rope_base_default, "RoPE theta");
  if (tie == TieKey::Present)
    s.optional("tie_word_embeddings", ValueType::Bool, "false", "output projection shares the embedding");
  return s;
}

void require_no_dropout(const ft::ConfigNode& cfg) {
  if (cfg.get<double>("attn_dropout") != 0.0)
    cfg.fail("attn_dropout", "attention dropout is not supported; use 0.0 (torchtune's finetuning configs do)");
}

DecoderConfig common_config(const ft::ConfigNode& cfg) {
  DecoderConfig c;
  c.vocab_size = cfg.get<std::int64_t>("vocab_size");
  c.num_layers = cfg.get<std::int64_t>("num_layers");
  c.num_heads = cfg.get<std::int64_t>("num_heads");
  c.num_kv_heads = cfg.get<std::int64_t>("num_kv_heads");
  c.embed_dim = cfg.get<std::int64_t>("embed_dim");
  c.max_seq_len = cfg.get<std::int64_t>("max_seq_len");
  c.head_dim = cfg.get<std::int64_t>("head_dim", 0);
  c.norm_eps = cfg.get<double>("norm_eps");
  c.rope_base = cfg.get<double>("rope_base");
  c.tie_word_embeddings = cfg.has("tie_word_embeddings") && cfg.get<bool>("tie_word_embeddings");
  require_no_dropout(cfg);
  return c;
}

std::unique_ptr<ft::Model> build_checked(const ft::ConfigNode& cfg, const DecoderConfig& config,
                                         const std::shared_ptr<const FamilyHf>& family, const ft::Model::Args& args) {
  if (std::string problem = config.problem(); !problem.empty()) cfg.fail("", problem);
  return make_family_model(config, family, args);
}

void register_named_sizes(ft::Registry& reg, const std::vector<NamedModelSize>& sizes,
                          const std::shared_ptr<const FamilyHf>& family) {
  for (const NamedModelSize& size : sizes) {
    const DecoderConfig config = size.config;
    reg.add<ft::Model>(size.component, ft::Schema{},
                       size.summary + ", " + with_thousands_separators(config.parameter_count()) + " parameters",
                       [config, family](const ft::ConfigNode& cfg, ft::Model::Args args) {
                         return build_checked(cfg, config, family, args);
                       });
  }
}

void register_hf_config_builder(ft::Registry& reg, const std::string& component, const std::string& summary,
                                const std::shared_ptr<const FamilyHf>& family) {
  ft::Schema s;
  s.required("path", ft::ValueType::String, "a Hugging Face config.json, or the model directory holding it")
      .path("path", ft::PathRole::InputPath);
  reg.add<ft::Model>(component, s, summary, [family](const ft::ConfigNode& cfg, ft::Model::Args args) {
    const ConfigJsonReader json(cfg, cfg.get<std::string>("path"));
    const std::string model_type = json.string("model_type", "");
    if (model_type != family->model_type)
      json.fail("model_type", "\"" + model_type + "\": this component reads " + family->model_type +
                                  " (fthost.models.from_hf_config picks the family by model_type)");
    return make_family_model(read_hf_config(json, *family), family, args);
  });
}

void register_sliding_window_builder(ft::Registry& reg, const std::string& component, const std::string& summary,
                                     const std::shared_ptr<const FamilyHf>& family) {
  ft::Schema schema = common_schema("10000.0", "1e-5");
  schema.required("intermediate_dim", ft::ValueType::Int, "MLP width")
      .optional("sliding_window", ft::ValueType::Int, "0",
                "attend to at most this many positions, itself included, in every layer (0: all; fthost's key)");
  reg.add<ft::Model>(component, schema, summary, [family](const ft::ConfigNode& cfg, ft::Model::Args args) {
    DecoderConfig c = common_config(cfg);
    c.intermediate_dim = cfg.get<std::int64_t>("intermediate_dim");
    c.sliding_window = cfg.get<std::int64_t>("sliding_window");
    return build_checked(cfg, c, family, args);
  });
}

void use_scaled_geglu_decoder(DecoderConfig& c) {
  c.tie_word_embeddings = true;
  c.norm_adds_one = true;
  c.activation = MlpActivation::GeluTanh;
  c.scale_embeddings = true;
}

void register_family(ft::Registry& reg, FamilyRecord record) {
  ft::ModelFamily family;
  family.name = std::move(record.name);
  family.hf_model_types = std::move(record.hf_model_types);
  family.hf_architectures = std::move(record.hf_architectures);
  family.checkpointer_model_types = std::move(record.checkpointer_model_types);
  family.hf_config_component = std::move(record.hf_config_component);
  family.default_tokenizer = std::move(record.default_tokenizer);
  reg.add_family(std::move(family));
}

std::function<std::optional<ft::TokenizerChoice>(const ft::ModelDirectory&)> tokenizer_by_model_type(
    std::string model_type, std::string component, std::vector<std::string> files) {
  return [model_type = std::move(model_type), component = std::move(component),
          files = std::move(files)](const ft::ModelDirectory& dir) -> std::optional<ft::TokenizerChoice> {
    if (dir.hf_model_type != model_type) return std::nullopt;
    for (const std::string& file : files)
      if (dir.has_file(file)) return ft::TokenizerChoice{component, dir.file(file), "path", ""};
    return std::nullopt;
  };
}

}  // namespace ft_models
