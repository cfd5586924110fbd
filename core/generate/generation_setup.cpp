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

// The checkpointer's model_type for a config.json model_type (it only names the family in its
// messages; the architecture itself comes from config.json).
std::string checkpointer_model_type(const std::string& hf_model_type) {
  if (hf_model_type == "qwen2") return "QWEN2";
  if (hf_model_type == "qwen3") return "QWEN3";
  if (hf_model_type == "mistral") return "MISTRAL";
  if (hf_model_type == "gemma") return "GEMMA";
  if (hf_model_type == "gemma2") return "GEMMA2";
  if (hf_model_type == "phi3") return "PHI3_MINI";
  return "LLAMA3";
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

// The tokenizer of the families whose special tokens alone do not tell them apart, by the
// directory's config.json; nullopt for the others (and for a directory without config.json).
std::optional<TokenizerTable> tokenizer_of_model_type(const fs::path& dir) {
  const fs::path config_json = dir / "config.json";
  if (!fs::exists(config_json)) return std::nullopt;
  const nlohmann::json hf = read_json(config_json);
  const std::string model_type = hf.is_object() ? hf.value("model_type", std::string()) : std::string();
  const fs::path sentencepiece = dir / "tokenizer.model", json = dir / "tokenizer.json";
  const fs::path vocab = dir / "vocab.json", merges = dir / "merges.txt";
  auto table = [](const char* component, const fs::path& file) { return TokenizerTable{component, file.string()}; };
  if ((model_type == "gemma" || model_type == "gemma2") && fs::exists(sentencepiece))
    return table("torchtune.models.gemma.gemma_tokenizer", sentencepiece);
  if (model_type == "mistral" && (fs::exists(sentencepiece) || fs::exists(json)))
    return table("torchtune.models.mistral.mistral_tokenizer", fs::exists(sentencepiece) ? sentencepiece : json);
  if (model_type == "phi3" && fs::exists(sentencepiece))
    return table("torchtune.models.phi3.phi3_mini_tokenizer", sentencepiece);
  if (model_type == "phi3" && fs::exists(vocab) && fs::exists(merges))
    return TokenizerTable{"torchtune.models.phi4.phi4_tokenizer", vocab.string(), "vocab_path", merges.string()};
  if (model_type == "qwen3" && fs::exists(json)) return table("torchtune.models.qwen3.qwen3_tokenizer", json);
  return std::nullopt;
}

}  // namespace

std::optional<TokenizerTable> find_hf_tokenizer(const std::string& dir) {
  if (auto by_model_type = tokenizer_of_model_type(dir)) return by_model_type;
  const fs::path json_path = fs::path(dir) / "tokenizer.json";
  if (fs::exists(json_path)) {
    const nlohmann::json j = read_json(json_path);
    std::vector<std::string> added;
    if (j.is_object() && j.contains("added_tokens") && j["added_tokens"].is_array())
      for (const auto& t : j["added_tokens"])
        if (t.is_object() && t.contains("content") && t["content"].is_string())
          added.push_back(t["content"].get<std::string>());
    const auto has = [&](const char* token) { return std::find(added.begin(), added.end(), token) != added.end(); };
    if (has("<|begin_of_text|>")) return TokenizerTable{"torchtune.models.llama3.llama3_tokenizer", json_path.string()};
    if (has("<|im_start|>")) return TokenizerTable{"torchtune.models.qwen2_5.qwen2_5_tokenizer", json_path.string()};
    if (has("<s>") && has("</s>"))
      return TokenizerTable{"torchtune.models.llama2.llama2_tokenizer", json_path.string()};
    throw ft::Error(json_path.string() +
                    ": a tokenizer of no family fthost knows (its added tokens have none of <|begin_of_text|>, "
                    "<|im_start|>, <s>); name the tokenizer component in the [tokenizer] table of a --config");
  }
  // A SentencePiece model beside the weights (Llama 2, Mistral).
  const fs::path sentencepiece = fs::path(dir) / "tokenizer.model";
  if (fs::exists(sentencepiece))
    return TokenizerTable{"torchtune.models.llama2.llama2_tokenizer", sentencepiece.string()};
  return std::nullopt;
}

std::shared_ptr<ft::detail::ConfigDocument> generation_config(const GenerationSource& source) {
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
                                            {"model_type", checkpointer_model_type(model_type)},
                                            {"output_dir", source.checkpoint_dir}});  // never written
    doc = std::make_shared<ft::detail::ConfigDocument>(std::move(root), "--checkpoint " + source.checkpoint_dir);
  }
  toml::table& root = doc->root();
  if (!root.contains("tokenizer") && !source.checkpoint_dir.empty())
    if (auto tokenizer = find_hf_tokenizer(source.checkpoint_dir)) root.insert("tokenizer", tokenizer_toml(*tokenizer));
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
