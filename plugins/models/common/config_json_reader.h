// A Hugging Face config.json read against the rules of the configuration classes that read it:
// typed values, the default of a key that is absent, and null accepted only where Hugging Face
// turns None into a default. Every failure names the file and the key, reported against the
// component's `path` key.
#pragma once

#include <ft/config.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace ft_models {

class ConfigJsonReader {
 public:
  // `path`: the config.json or the directory holding it.
  ConfigJsonReader(const ft::ConfigNode& cfg, std::string path);
  const std::string& path() const { return path_; }
  // The object under `field` (a multimodal config's text_config), read with the same rules; its
  // failures name the key as "field.key".
  ConfigJsonReader nested(const std::string& field) const;

  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    cfg_.fail("path", path_ + ": \"" + field_prefix_ + field + "\": " + message);
  }
  // Present with a value other than null.
  bool has(const std::string& field) const { return json_.contains(field) && !json_[field].is_null(); }
  bool is_null(const std::string& field) const { return json_.contains(field) && json_[field].is_null(); }
  const nlohmann::json& at(const std::string& field) const { return json_[field]; }

  // A key absent from config.json takes `fallback` (nullopt: required). A key written as null
  // takes the fallback only where Hugging Face's configuration class turns None into that
  // default (NullIs::Default); elsewhere Hugging Face would compute with None, so it is refused.
  enum class NullIs { Refused, Default };

  std::int64_t integer(const std::string& field, std::optional<std::int64_t> fallback = std::nullopt,
                       NullIs null = NullIs::Refused) const {
    if (!usable(field, fallback.has_value(), null, "an integer")) return *fallback;
    const nlohmann::json& value = json_[field];
    if (!value.is_number_integer()) fail(field, "expected an integer, got " + value.dump());
    if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(kLargestSize))
      fail(field, value.dump() + " is out of range (at most " + std::to_string(kLargestSize) + ")");
    return value.get<std::int64_t>();
  }
  // A size: a positive integer no larger than kLargestSize.
  std::int64_t size(const std::string& field, std::optional<std::int64_t> fallback = std::nullopt,
                    NullIs null = NullIs::Refused) const {
    const std::int64_t value = integer(field, fallback, null);
    if (value <= 0 || value > kLargestSize)
      fail(field,
           "expected a positive integer of at most " + std::to_string(kLargestSize) + ", got " + std::to_string(value));
    return value;
  }
  double number(const std::string& field, std::optional<double> fallback = std::nullopt,
                NullIs null = NullIs::Refused) const {
    if (!usable(field, fallback.has_value(), null, "a number")) return *fallback;
    if (!json_[field].is_number()) fail(field, "expected a number, got " + json_[field].dump());
    return json_[field].get<double>();
  }
  bool boolean(const std::string& field, bool fallback, NullIs null = NullIs::Refused) const {
    if (!usable(field, true, null, "true or false")) return fallback;
    if (!json_[field].is_boolean()) fail(field, "expected true or false, got " + json_[field].dump());
    return json_[field].get<bool>();
  }
  std::string string(const std::string& field, const std::string& fallback, NullIs null = NullIs::Refused) const {
    if (!usable(field, true, null, "a string")) return fallback;
    if (!json_[field].is_string()) fail(field, "expected a string, got " + json_[field].dump());
    return json_[field].get<std::string>();
  }

  // Tensor dimensions beyond 2^31 - 1 are no model's: a larger value is a damaged file.
  static constexpr std::int64_t kLargestSize = 2147483647;

 private:
  // Whether `field` has a value to read: false where the fallback applies.
  bool usable(const std::string& field, bool has_fallback, NullIs null, const char* expected) const {
    if (!json_.contains(field)) {
      if (!has_fallback) fail(field, "required, missing");
      return false;
    }
    if (!json_[field].is_null()) return true;
    if (null == NullIs::Default && has_fallback) return false;
    fail(field, std::string("null is not valid here: expected ") + expected);
  }

  ConfigJsonReader(const ft::ConfigNode& cfg, std::string path, nlohmann::json json, std::string field_prefix)
      : cfg_(cfg), path_(std::move(path)), json_(std::move(json)), field_prefix_(std::move(field_prefix)) {}

  const ft::ConfigNode& cfg_;
  std::string path_;
  nlohmann::json json_;
  std::string field_prefix_;
};

}  // namespace ft_models
