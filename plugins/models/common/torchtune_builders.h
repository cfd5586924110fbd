// What torchtune's model builders share: the keys of the generic builders (vocab_size,
// num_layers, num_heads, ...), the check before a model is built, and the named sizes, each a
// builder without keys whose `fthost ls model -v` line gives its parameter count.
#pragma once

#include "decoder_config.h"
#include "family_model.h"

#include <ft/config.h>
#include <ft/registry.h>
#include <ft/schema.h>

#include <ft/model_family.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ft_models {

// Keys every generic builder takes; defaults as torchtune's builder of the family sets them. Some
// builders require head_dim, and some have no tie_word_embeddings key (always tied).
enum class HeadDimKey { Optional, Required };
enum class TieKey { Present, Absent };
ft::Schema common_schema(const std::string& rope_base_default, const std::string& norm_eps_default,
                         HeadDimKey head_dim = HeadDimKey::Optional, TieKey tie = TieKey::Present);
// Those keys read into a DecoderConfig (attn_dropout: only 0.0).
DecoderConfig common_config(const ft::ConfigNode& cfg);
// Refuses attention dropout, which no fthost decoder has.
void require_no_dropout(const ft::ConfigNode& cfg);
// `config` checked (DecoderConfig::problem, reported against the table), then built.
std::unique_ptr<ft::Model> build_checked(const ft::ConfigNode& cfg, const DecoderConfig& config,
                                         const std::shared_ptr<const FamilyHf>& family, const ft::Model::Args& args);

// "8030261248" -> "8,030,261,248": parameter counts in component summaries.
std::string with_thousands_separators(std::int64_t n);

struct NamedModelSize {
  std::string component;  // the `_component_` name, e.g. "torchtune.models.llama3.llama3_8b"
  std::string summary;    // one line for `fthost ls model -v`
  DecoderConfig config;
};
void register_named_sizes(ft::Registry& reg, const std::vector<NamedModelSize>& sizes,
                          const std::shared_ptr<const FamilyHf>& family);

// A generic builder for a decoder with an optional sliding window on every layer: the common
// keys, intermediate_dim, and sliding_window (0: none).
void register_sliding_window_builder(ft::Registry& reg, const std::string& component, const std::string& summary,
                                     const std::shared_ptr<const FamilyHf>& family);

// The decoder some families are: (1 + w) norms, GeGLU, embeddings scaled by sqrt(dim), the output
// tied to the embedding.
void use_scaled_geglu_decoder(DecoderConfig& c);

// The component reading a family from a config.json (`path`: the file or its directory).
void register_hf_config_builder(ft::Registry& reg, const std::string& component, const std::string& summary,
                                const std::shared_ptr<const FamilyHf>& family);

// The family record (ft/model_family.h), registered.
struct FamilyRecord {
  std::string name;
  std::vector<std::string> hf_model_types;
  std::vector<std::string> hf_architectures;
  std::vector<std::string> checkpointer_model_types;
  std::string hf_config_component;
  std::function<std::optional<ft::TokenizerChoice>(const ft::ModelDirectory&)> default_tokenizer;
};
void register_family(ft::Registry& reg, FamilyRecord record);

// The tokenizer rule of a family whose model directories are told apart by config.json's
// model_type: `component` reading the first of `files` the directory has.
std::function<std::optional<ft::TokenizerChoice>(const ft::ModelDirectory&)> tokenizer_by_model_type(
    std::string model_type, std::string component, std::vector<std::string> files);

}  // namespace ft_models
