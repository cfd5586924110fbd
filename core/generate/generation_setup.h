// What `fthost generate` runs: the model, tokenizer and checkpointer components, built through
// the plugins exactly as the recipe builds them, from a run configuration (`--config`) or from a
// Hugging Face model directory alone (`--checkpoint DIR`: its config.json and tokenizer).
#pragma once

#include "ft_host/config_document.h"

#include <ft/model.h>
#include <ft/registry.h>
#include <ft/tokenizer.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fthost {

struct GenerationSource {
  std::string checkpoint_dir;          // --checkpoint: weights to load ("" : the config's checkpointer)
  std::string config_path;             // --config: a run configuration naming the components
  std::vector<std::string> overrides;  // key=value / ~key, applied to --config
  std::string dtype;                   // --dtype ("" : the config's, else fp32)
  std::string device;                  // --device ("" : the config's, else cpu)
};

// The `[tokenizer]` table that reads the tokenizer of a Hugging Face directory: the component and
// its files, as the model families registered by the loaded plugins choose them
// (ModelFamily::default_tokenizer): the family of config.json's model_type first, then the one
// family that recognises the tokenizer files' special tokens. nullopt when the directory holds no
// tokenizer file. Throws ft::Error when it holds one no family claims, or two families do.
using TokenizerTable = ft::TokenizerChoice;
std::optional<TokenizerTable> find_hf_tokenizer(const std::string& dir, const ft::Registry& registry);

// The configuration the components are built from: top-level dtype and device, [model],
// [checkpointer] and, when there is one, [tokenizer]. For --checkpoint alone, written for the
// directory (fthost.models.from_hf_config over its config.json); with --config, the run
// configuration with --checkpoint as the checkpointer's checkpoint_dir. Throws ft::Error naming
// the missing directory or file.
std::shared_ptr<ft::detail::ConfigDocument> generation_config(const GenerationSource& source,
                                                              const ft::Registry& registry);

struct GenerationComponents {
  std::shared_ptr<ft::Model> model;
  std::shared_ptr<ft::Tokenizer> tokenizer;      // null: prompts must be token ids
  std::string weights;                           // where the weights came from, for the log
  std::vector<std::int64_t> config_stop_tokens;  // eos_token_id of the directory's config.json
};

// Instantiates and loads everything `root` (from generation_config) names, in eval mode.
GenerationComponents build_generation_components(const ft::Registry& registry, const ft::ConfigNode& root,
                                                 const std::string& checkpoint_dir);

}  // namespace fthost
