#include "config_json_reader.h"

#include <filesystem>
#include <fstream>

namespace ft_models {

ConfigJsonReader::ConfigJsonReader(const ft::ConfigNode& cfg, std::string path) : cfg_(cfg), path_(std::move(path)) {
  if (std::error_code ignored; std::filesystem::is_directory(path_, ignored)) path_ += "/config.json";
  std::ifstream in(path_);
  if (!in) cfg_.fail("path", "cannot read " + path_);
  try {
    json_ = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    cfg_.fail("path", path_ + ": not valid JSON: " + e.what());
  }
  if (!json_.is_object()) cfg_.fail("path", path_ + ": expected a JSON object");
}

ConfigJsonReader ConfigJsonReader::nested(const std::string& field) const {
  if (!has(field)) fail(field, "required, missing");
  if (!json_[field].is_object()) fail(field, "expected an object, got " + json_[field].dump());
  return ConfigJsonReader(cfg_, path_, json_[field], field_prefix_ + field + ".");
}

}  // namespace ft_models
