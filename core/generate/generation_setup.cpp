#include "generate/generation_setup.h"

#include "config/config_loader.h"
#include "config/dtype_setting.h"
#include "train/device_support.h"

#include <ft/checkpointer.h>
#include <ft/errors.h>

#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

namespace fthost {

namespace {

namespace fs = boost::filesystem;

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path.string());
  if (!in) throw ft::Error("cannot read " + path.string());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw ft::Error(path.string() + ": not valid JSON: " + e.what());
  }
}

void require_model_directory(const std::string& dir) {
  if (!fs::exists(dir)) throw ft::Error("--checkpoint: " + dir + " does not exist");
  if (!fs::is_directory(dir))
    throw ft::Error("--checkpoint: " + dir + " is not a directory (give the Hugging Face model directory)");
}

// The checkpointer's model_type for a config.json model_type: the name the family reading it
// registered (the checkpointer only names the family in its messages; the architecture itself
// comes from config.json). For a model_type no family reads, any registered name: the model,
// built first from the same config.json, is refused with the reason (multimodal, mixture of
// experts, unknown) before the checkpointer is made.
std::string checkpointer_model_type(const ft::Registry& registry, const std::string& hf_model_type) {
  if (const ft::ModelFamily* family = registry.family_reading(hf_model_type);
      family && !family->checkpointer_model_types.empty())
    return family->checkpointer_model_types.front();
  const std::vector<std::string> names = registry.checkpointer_model_types();
  return names.empty() ? std::string() : names.front();
}

// eos_token_id of a config.json or generation_config.json: an id or a list of ids.
void add_eos_ids(const fs::path& path, std::vector<std::int64_t>& ids) {
  if (!fs::exists(path)) return;
  const nlohmann::json j = read_json(path);
  if (!j.is_object() || !j.contains("eos_token_id")) return;
  const nlohmann::json& eos = j["eos_token_id"];
  const auto add = [&](const nlohmann::json& id) {
    if (id.is_number_integer() && std::find(ids.begin(), ids.end(), id.get<std::int64_t>()) == ids.end())
      ids.push_back(id.get<std::int64_t>());
  };
  if (eos.is_array()) {
    for (const auto& id : eos) add(id);
  } else {
    add(eos);
  }
}

toml::table tokenizer_toml(const TokenizerTable& t) {
  toml::table table{{"_component_", t.component}, {t.path_key, t.path}};
  if (!t.merges_path.empty()) table.insert("merges_path", t.merges_path);
  return table;
}

// The directory as the families see it: config.json's model_type, tokenizer.json's added tokens.
// A tokenizer.json that cannot be read is reported only when its tokens are needed (the family
// of config.json's model_type may read another file): `unreadable` holds why.
ft::ModelDirectory model_directory(const std::string& dir, std::string& unreadable) {
  ft::ModelDirectory d;
  d.path = dir;
  const fs::path config_json = fs::path(dir) / "config.json";
  if (fs::exists(config_json)) {
    const nlohmann::json hf = read_json(config_json);
    if (hf.is_object()) d.hf_model_type = hf.value("model_type", std::string());
  }
  const fs::path tokenizer_json = fs::path(dir) / "tokenizer.json";
  if (!fs::exists(tokenizer_json)) return d;
  try {
    const nlohmann::json j = read_json(tokenizer_json);
    if (j.is_object() && j.contains("added_tokens") && j["added_tokens"].is_array())
      for (const auto& t : j["added_tokens"])
        if (t.is_object() && t.contains("content") && t["content"].is_string())
          d.added_tokens.push_back(t["content"].get<std::string>());
  } catch (const ft::Error& e) {
    unreadable = e.what();
  }
  return d;
}

}  // namespace

std::optional<TokenizerTable> find_hf_tokenizer(const std::string& dir, const ft::Registry& registry) {
  std::string unreadable;
  const ft::ModelDirectory d = model_directory(dir, unreadable);
  // The family of config.json's model_type decides first; then every family is asked whether the
  // tokenizer files are its own (special tokens), and at most one may say yes.
  if (const ft::ModelFamily* family = registry.family_reading(d.hf_model_type); family && family->default_tokenizer)
    if (auto choice = family->default_tokenizer(d)) return choice;
  if (!unreadable.empty()) throw ft::Error(unreadable);
  std::optional<TokenizerTable> found;
  std::string claimed_by;
  for (const ft::ModelFamily* family : registry.families()) {
    if (!family->default_tokenizer) continue;
    if (auto choice = family->default_tokenizer(d)) {
      if (found)
        throw ft::Error(dir + ": its tokenizer is claimed by the model families '" + claimed_by + "' and '" +
                        family->name + "'; name the tokenizer component in the [tokenizer] table of a --config");
      found = std::move(choice);
      claimed_by = family->name;
    }
  }
  if (found) return found;
  if (d.has_file("tokenizer.json"))
    throw ft::Error(d.file("tokenizer.json") +
                    ": a tokenizer of no family fthost knows (no loaded model family claims its files); name the "
                    "tokenizer component in the [tokenizer] table of a --config");
  return std::nullopt;
}

std::shared_ptr<ft::detail::ConfigDocument> generation_config(const GenerationSource& source,
                                                              const ft::Registry& registry) {
  if (source.config_path.empty() && source.checkpoint_dir.empty())
    throw ft::Error("give --checkpoint DIR (a Hugging Face model directory) or --config FILE (a run configuration)");
  if (!source.checkpoint_dir.empty()) require_model_directory(source.checkpoint_dir);
  if (source.config_path.empty() && !source.overrides.empty())
    throw ft::Error("'" + source.overrides.front() + "': overrides apply to a --config, and none is given");

  std::shared_ptr<ft::detail::ConfigDocument> doc;
  if (!source.config_path.empty()) {
    doc = load_config(source.config_path, source.overrides);
    for (const char* table : {"model", "checkpointer"})
      if (!doc->root().contains(table) || !doc->root()[table].is_table())
        throw ft::ConfigError(source.config_path + ": generate builds the model from the [" + std::string(table) +
                              "] table, and there is none");
    if (!source.checkpoint_dir.empty()) {
      // The weights to read are --checkpoint's; the files the run config lists are its base model's.
      toml::table& checkpointer = *doc->root()["checkpointer"].as_table();
      checkpointer.insert_or_assign("checkpoint_dir", source.checkpoint_dir);
      checkpointer.erase("checkpoint_files");
      checkpointer.erase("recipe_checkpoint");
    }
  } else {
    const fs::path config_json = fs::path(source.checkpoint_dir) / "config.json";
    if (!fs::exists(config_json))
      throw ft::Error("--checkpoint: " + source.checkpoint_dir +
                      " has no config.json (a Hugging Face model directory holds config.json, the safetensors "
                      "weights and tokenizer.json)");
    const nlohmann::json hf = read_json(config_json);
    const std::string model_type = hf.is_object() ? hf.value("model_type", std::string()) : std::string();
    toml::table root;
    root.insert("model", toml::table{{"_component_", "fthost.models.from_hf_config"}, {"path", config_json.string()}});
    root.insert("checkpointer", toml::table{{"_component_", "torchtune.training.FullModelHFCheckpointer"},
                                            {"checkpoint_dir", source.checkpoint_dir},
                                            {"model_type", checkpointer_model_type(registry, model_type)},
                                            {"output_dir", source.checkpoint_dir}});  // never written
    doc = std::make_shared<ft::detail::ConfigDocument>(std::move(root), "--checkpoint " + source.checkpoint_dir);
  }
  toml::table& root = doc->root();
  if (!root.contains("tokenizer") && !source.checkpoint_dir.empty())
    if (auto tokenizer = find_hf_tokenizer(source.checkpoint_dir, registry))
      root.insert("tokenizer", tokenizer_toml(*tokenizer));
  if (!source.dtype.empty()) root.insert_or_assign("dtype", source.dtype);
  if (!source.device.empty()) root.insert_or_assign("device", source.device);
  if (!root.contains("dtype")) root.insert("dtype", "fp32");
  if (!root.contains("device")) root.insert("device", "cpu");
  return doc;
}

GenerationComponents build_generation_components(const ft::Registry& registry, const ft::ConfigNode& root,
                                                 const std::string& checkpoint_dir) {
  GenerationComponents c;
  const c10::ScalarType dtype = read_dtype(root);
  const c10::Device device = resolve_device(root);
  std::uint64_t seed = 0;
  try {
    seed = static_cast<std::uint64_t>(root.get<std::int64_t>("seed", 0));
  } catch (const ft::ConfigError&) {
    // torchtune's `seed: null`: the initialisation seed only matters without a checkpoint.
  }
  c.model = registry.instantiate<ft::Model>(root.table("model"), {dtype, device, seed});
  std::string output_dir = checkpoint_dir.empty() ? std::string(".") : checkpoint_dir;
  try {
    output_dir = root.get<std::string>("output_dir", output_dir);
  } catch (const ft::ConfigError&) {
  }
  const auto checkpointer = registry.instantiate<ft::Checkpointer>(root.table("checkpointer"), {output_dir});
  const std::string dir = root.table("checkpointer").get<std::string>("checkpoint_dir", "");
  c.weights = checkpointer->load_model(*c.model)
                  ? "weights from " + dir
                  : "no checkpoint to load: the model's random initialisation (seed " + std::to_string(seed) + ")";
  c.model->module().eval();
  if (root.is_table("tokenizer")) c.tokenizer = registry.instantiate<ft::Tokenizer>(root.table("tokenizer"));
  if (!dir.empty()) {
    add_eos_ids(fs::path(dir) / "config.json", c.config_stop_tokens);
    add_eos_ids(fs::path(dir) / "generation_config.json", c.config_stop_tokens);
  }
  return c;
}

}  // namespace fthost
