#include <ft/checkpoint_files.h>

#include <ft/errors.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

namespace ft {

namespace {

// `format` split at its placeholders: the literal text around them ({{ and }} unescaped) and
// each placeholder's argument index.
struct ParsedFormat {
  std::vector<std::string> literals;  // one more than placeholders
  std::vector<std::size_t> indices;
};

ParsedFormat parse_format(const std::string& format) {
  const std::string hint =
      "filename_format \"" + format + "\": expected exactly two {} placeholders, e.g. \"model-{}-of-{}.safetensors\"";
  ParsedFormat parsed;
  parsed.literals.emplace_back();
  bool automatic = false, manual = false;
  for (std::size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if ((c == '{' || c == '}') && i + 1 < format.size() && format[i + 1] == c) {
      parsed.literals.back() += c;
      ++i;
      continue;
    }
    if (c == '}') throw ft::Error(hint + " (a single '}' must be written '}}')");
    if (c != '{') {
      parsed.literals.back() += c;
      continue;
    }
    const auto close = format.find('}', i);
    if (close == std::string::npos) throw ft::Error(hint + " (unclosed '{')");
    const std::string field = format.substr(i + 1, close - i - 1);
    if (field.empty()) {
      automatic = true;
      parsed.indices.push_back(parsed.indices.size());
    } else if (field == "0" || field == "1") {
      manual = true;
      parsed.indices.push_back(field == "0" ? 0 : 1);
    } else {
      throw ft::Error(hint + " (placeholder {" + field + "} is not {}, {0} or {1})");
    }
    parsed.literals.emplace_back();
    i = close;
  }
  if (automatic && manual) throw ft::Error(hint + " (it mixes {} with numbered placeholders)");
  if (parsed.indices.size() != 2) throw ft::Error(hint);
  return parsed;
}

}  // namespace

std::vector<std::string> expand_filename_format(const std::string& filename_format, const std::string& max_filename) {
  const ParsedFormat parsed = parse_format(filename_format);
  if (max_filename.empty() || max_filename.size() > 9 ||
      !std::all_of(max_filename.begin(), max_filename.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw ft::Error("max_filename \"" + max_filename + "\": expected the number of files as digits, e.g. \"00004\"");
  const std::size_t count = std::stoul(max_filename);
  if (count == 0) throw ft::Error("max_filename \"" + max_filename + "\": names no files");
  std::vector<std::string> names;
  for (std::size_t i = 1; i <= count; ++i) {
    std::string index = std::to_string(i);
    if (index.size() < max_filename.size()) index.insert(0, max_filename.size() - index.size(), '0');
    const std::string arguments[2] = {index, max_filename};
    std::string name = parsed.literals[0];
    for (std::size_t p = 0; p < parsed.indices.size(); ++p)
      name += arguments[parsed.indices[p]] + parsed.literals[p + 1];
    names.push_back(std::move(name));
  }
  return names;
}

std::vector<std::string> formatted_checkpoint_files(const ft::ConfigNode& table) {
  for (const auto& key : table.keys())
    if (key != "filename_format" && key != "max_filename")
      table.fail(key, "unknown key; the table form of checkpoint_files has filename_format and max_filename");
  const std::string format = table.get<std::string>("filename_format");
  std::string max_filename;
  try {
    max_filename = table.get<std::string>("max_filename");
  } catch (const ft::ConfigError&) {
    if (!table.has("max_filename")) throw;
    table.fail("max_filename",
               "expected a string such as \"00004\" (quote it: unquoted, YAML reads 00004 as an "
               "integer and loses the width)");
  }
  try {
    return expand_filename_format(format, max_filename);
  } catch (const ft::Error& e) {
    const std::string what = e.what();
    table.fail(what.rfind("max_filename", 0) == 0 ? "max_filename" : "filename_format", what);
  }
}

std::vector<std::string> listed_checkpoint_files(const ConfigNode& checkpointer, std::string_view key) {
  if (checkpointer.is_table(key)) return formatted_checkpoint_files(checkpointer.table(key));
  return checkpointer.get<std::vector<std::string>>(key, {});
}

namespace {

namespace fs = std::filesystem;

// A JSON value for an error message, cut short so a huge header does not flood the terminal.
std::string excerpt(const nlohmann::json& value) {
  std::string text = value.dump();
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

// The .safetensors files of `dir`, for "file not found" messages.
std::string safetensors_listing(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".safetensors") names.push_back(it->path().filename().string());
  if (names.empty()) return dir + " holds no .safetensors files";
  std::sort(names.begin(), names.end());
  std::string out = dir + " holds:";
  for (const auto& n : names) out += " " + n;
  return out;
}

std::map<std::string, std::string> read_weight_map(const std::string& index_path) {
  std::ifstream in(index_path);
  if (!in) throw Error(index_path + ": cannot read");
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(index_path + ": not valid JSON: " + e.what());
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw Error(index_path + ": expected an object with a \"weight_map\" object");
  std::map<std::string, std::string> weight_map;
  for (const auto& [name, file] : index["weight_map"].items()) {
    if (!file.is_string())
      throw Error(index_path + ": weight_map[\"" + name + "\"]: expected a file name, got " + excerpt(file));
    weight_map[name] = file.get<std::string>();
  }
  if (weight_map.empty()) throw Error(index_path + ": weight_map is empty");
  return weight_map;
}

}  // namespace

CheckpointFileList resolve_checkpoint_files(const std::string& dir, const std::vector<std::string>& listed) {
  if (!fs::is_directory(dir)) throw Error(dir + ": checkpoint directory does not exist");
  CheckpointFileList out;
  if (!listed.empty()) {
    for (const std::string& name : listed) {
      const std::string path = (fs::path(dir) / name).string();
      if (!fs::exists(path)) throw Error(path + ": checkpoint file does not exist; " + safetensors_listing(dir));
      if (!fs::is_regular_file(path)) throw Error(path + ": checkpoint file is not a regular file");
      if (fs::path(path).extension() != ".safetensors")
        throw Error(path + ": only .safetensors checkpoints can be read (PyTorch .bin/.pt pickles are not)");
      out.files.push_back(path);
    }
    return out;
  }
  const std::string index_path = (fs::path(dir) / kCheckpointIndexFileName).string();
  if (fs::exists(index_path)) {
    out.index_path = index_path;
    out.weight_map = read_weight_map(index_path);
    std::set<std::string> shards;
    for (const auto& [name, file] : out.weight_map) shards.insert(file);
    for (const std::string& shard : shards) {
      const std::string path = (fs::path(dir) / shard).string();
      if (!fs::is_regular_file(path))
        throw Error(index_path + ": lists shard " + shard + ", which does not exist; " + safetensors_listing(dir));
      out.files.push_back(path);
    }
    return out;
  }
  const std::string single = (fs::path(dir) / kSingleCheckpointFileName).string();
  if (fs::is_regular_file(single)) {
    out.files.push_back(single);
    return out;
  }
  throw Error(dir + ": no " + kCheckpointIndexFileName + " or " + kSingleCheckpointFileName + " to read; " +
              safetensors_listing(dir) + " (name the files in checkpoint_files)");
}

}  // namespace ft
