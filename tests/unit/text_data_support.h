// Helpers for the tokenizer and text-dataset tests: tokenizers, datasets and collates of the
// built-in plugins instantiated from TOML text as the recipe does, and the fixture files they read.
#pragma once

#include "builtin_plugins.h"
#include "test_helpers.h"

#include <ft/collate.h>
#include <ft/dataset.h>
#include <ft/tokenizer.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace fttest {

inline std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

inline std::string tokenizers_dir() { return fixtures_dir() + "/tokenizers"; }
inline std::string data_dir() { return fixtures_dir() + "/data"; }
inline std::string assets_dir() { return fixtures_dir() + "/torchtune_assets"; }

// `keys`: TOML lines of the [tokenizer] table after _component_.
inline std::shared_ptr<ft::Tokenizer> make_tokenizer(const std::string& component, const std::string& keys) {
  auto root = config_root("[tokenizer]\n_component_ = \"" + component + "\"\n" + keys);
  return builtin_registry().instantiate<ft::Tokenizer>(root.table("tokenizer"));
}

inline std::shared_ptr<ft::Tokenizer> llama3_json_tokenizer(const std::string& extra = "") {
  return make_tokenizer("torchtune.models.llama3.llama3_tokenizer",
                        "path = " + quoted(tokenizers_dir() + "/llama3/tokenizer.json") + "\n" + extra);
}

inline std::shared_ptr<ft::Dataset> make_dataset(const std::string& component, const std::string& keys,
                                                 std::shared_ptr<const ft::Tokenizer> tokenizer) {
  auto root = config_root("[dataset]\n_component_ = \"" + component + "\"\n" + keys);
  return builtin_registry().instantiate<ft::Dataset>(root.table("dataset"), {std::move(tokenizer)});
}

inline std::shared_ptr<ft::Collate> make_collate(const std::string& component, std::int64_t pad_id) {
  auto root = config_root("[collate]\n_component_ = \"" + component + "\"\n");
  return builtin_registry().instantiate<ft::Collate>(root.table("collate"), {pad_id, ft::kIgnoreIndex});
}

inline std::vector<std::int64_t> concat(std::initializer_list<std::vector<std::int64_t>> parts) {
  std::vector<std::int64_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

inline nlohmann::json read_json_file(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

}  // namespace fttest
