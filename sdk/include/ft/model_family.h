// What the host and the checkpointer know of a model family, registered by the family's plugin
// beside its components (Registry::add_family): the names the family answers to in Hugging Face
// files and in torchtune's checkpointer, the component that builds it from a config.json, and the
// tokenizer `fthost generate` reads from one of its model directories. Nothing outside a family's
// own folder switches on its name.
#pragma once

#include <ft/export.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ft {

// A tokenizer component and the files it reads, as a `[tokenizer]` table names them.
struct TokenizerChoice {
  std::string component;  // e.g. "torchtune.models.llama3.llama3_tokenizer"
  std::string path;       // the tokenizer file, under the key `path_key`
  std::string path_key = "path";
  std::string merges_path;  // BPE merges (key merges_path) where the tokenizer takes them
};

// A Hugging Face model directory as `fthost generate --checkpoint` finds it.
struct FT_API ModelDirectory {
  std::string path;
  std::string hf_model_type;              // config.json's model_type; empty without one
  std::vector<std::string> added_tokens;  // tokenizer.json's added tokens; empty without the file

  bool has_file(const std::string& name) const;
  std::string file(const std::string& name) const;  // path/name
  bool has_added_token(const std::string& token) const;
};

struct ModelFamily {
  std::string name;                                   // e.g. "gemma2"
  std::vector<std::string> hf_model_types;            // config.json model_type values it reads
  std::vector<std::string> hf_architectures;          // config.json architectures it writes
  std::vector<std::string> checkpointer_model_types;  // torchtune's checkpointer model_type values
  // The model component that builds the family from a Hugging Face config.json (its key `path`:
  // the file or its directory); empty when the family reads none.
  std::string hf_config_component;
  // The tokenizer of a model directory of this family, nullopt when the directory is not one of
  // its own (its model_type, else its tokenizer files' special tokens, decide).
  std::function<std::optional<TokenizerChoice>(const ModelDirectory&)> default_tokenizer;
  std::string library;  // the plugin library that registered it (Registry::merge)
};

}  // namespace ft
