#include <ft/dataset_files.h>

#include <ft/errors.h>
#include <ft/hub_cache.h>

#include <nlohmann/json.hpp>

#include <glob.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace ft {

namespace {

namespace fs = std::filesystem;

// source = "json" / "text" / "csv" / "parquet" / "arrow": the format of data_files.
std::optional<DataFormat> format_named(const std::string& name) {
  if (name == "json") return DataFormat::Json;
  if (name == "text") return DataFormat::Text;
  if (name == "csv") return DataFormat::Csv;
  if (name == "parquet") return DataFormat::Parquet;
  if (name == "arrow") return DataFormat::Arrow;
  return std::nullopt;
}

std::optional<DataFormat> format_of_file(const fs::path& path) {
  const std::string ext = path.extension().string();
  if (ext == ".json" || ext == ".jsonl") return DataFormat::Json;
  if (ext == ".txt") return DataFormat::Text;
  if (ext == ".csv") return DataFormat::Csv;
  if (ext == ".parquet") return DataFormat::Parquet;
  if (ext == ".arrow") return DataFormat::Arrow;
  return std::nullopt;
}

// The metadata files `datasets` and the Hub keep beside the data, never records.
bool is_metadata_file(const std::string& name) {
  return name == "dataset_info.json" || name == "dataset_infos.json" || name == "dataset_dict.json" ||
         name == "state.json";
}

// The files of `dir` (recursively, in path order) in `format`; hidden entries and metadata
// files are skipped.
std::vector<std::string> files_in(const fs::path& dir, std::optional<DataFormat> format) {
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (!name.empty() && (name[0] == '.' || name.rfind("__", 0) == 0)) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (is_metadata_file(name)) continue;
    if (it->is_regular_file() && format_of_file(it->path()) && (!format || *format_of_file(it->path()) == *format))
      files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// data_files: each entry a file, a directory (its files in the format) or a glob.
std::vector<std::string> expand_data_files(const std::vector<std::string>& entries, DataFormat format) {
  std::vector<std::string> files;
  for (const auto& entry : entries) {
    if (entry.find_first_of("*?[") != std::string::npos) {
      glob_t matches{};
      const int status = ::glob(entry.c_str(), 0, nullptr, &matches);
      for (std::size_t i = 0; status == 0 && i < matches.gl_pathc; ++i) files.emplace_back(matches.gl_pathv[i]);
      ::globfree(&matches);
      if (status != 0) throw Error("data_files = \"" + entry + "\": the pattern matches no file");
    } else if (fs::is_directory(entry)) {
      auto in_dir = files_in(entry, format);
      if (in_dir.empty())
        throw Error("data_files = \"" + entry + "\": the directory has no " + data_format_name(format) + " file");
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else {
      files.push_back(entry);
    }
  }
  return files;
}

// datasets' split keywords (data_files inference): a file belongs to a split when one of its
// path's words (split at non-letters) is the split's keyword.
const std::vector<std::pair<std::string, std::vector<std::string>>>& split_keywords() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> k{
      {"train", {"train", "training"}},
      {"validation", {"validation", "valid", "dev", "val"}},
      {"test", {"test", "testing", "eval", "evaluation"}}};
  return k;
}

std::set<std::string> words_of(const std::string& relative_path) {
  std::set<std::string> words;
  std::string word;
  for (char c : relative_path + "/") {
    if (std::isalpha(static_cast<unsigned char>(c))) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!word.empty()) {
      words.insert(word);
      word.clear();
    }
  }
  return words;
}

// The data files of a directory (a Hub snapshot, or a local directory of data files) for split
// `name`, in one format (the first of parquet, arrow, json, csv, text the directory has), as
// `datasets` assigns them: by split keywords when any file has one, else all are "train".
std::pair<std::vector<std::string>, DataFormat> split_files(const fs::path& dir, const std::string& name,
                                                            const std::string& what) {
  for (DataFormat f : {DataFormat::Parquet, DataFormat::Arrow, DataFormat::Json, DataFormat::Csv, DataFormat::Text}) {
    const auto files = files_in(dir, f);
    if (files.empty()) continue;
    auto split_of = [&](const std::string& file) -> std::string {
      // Lexically: a Hub snapshot's files are links into its blobs, which carry no split names.
      const auto words = words_of(fs::path(file).lexically_relative(dir).string());
      for (const auto& [split, keywords] : split_keywords())
        for (const auto& k : keywords)
          if (words.count(k)) return split;
      return "";
    };
    std::map<std::string, std::vector<std::string>> by_split;
    for (const auto& file : files)
      if (const std::string split = split_of(file); !split.empty()) by_split[split].push_back(file);
    if (by_split.empty()) by_split["train"] = files;
    if (!by_split.count(name)) {
      std::string known;
      for (const auto& [split, _] : by_split) known += (known.empty() ? "" : ", ") + split;
      throw Error(what + " has no split \"" + name + "\" (its " + data_format_name(f) + " files make the splits " +
                  known + ")");
    }
    return {by_split.at(name), f};
  }
  throw Error(what + " has no data file (.parquet, .arrow, .json, .jsonl, .csv or .txt)");
}

// A directory `datasets`' save_to_disk wrote: a Dataset (state.json naming its Arrow files) or a
// DatasetDict (dataset_dict.json, one such directory per split).
std::optional<std::vector<std::string>> saved_dataset_files(const fs::path& dir, const std::string& split_name) {
  fs::path dataset = dir;
  if (fs::exists(dir / "dataset_dict.json")) {
    dataset = dir / split_name;
    if (!fs::exists(dataset / "state.json"))
      throw Error(dir.string() + ": this DatasetDict (dataset_dict.json) has no split \"" + split_name + "\"");
  } else if (!fs::exists(dir / "state.json")) {
    return std::nullopt;
  }
  const fs::path state_path = dataset / "state.json";
  std::vector<std::string> files;
  try {
    std::ifstream in(state_path);
    if (!in) throw Error(state_path.string() + ": cannot read");
    const auto state = nlohmann::json::parse(in);
    for (const auto& f : state.at("_data_files"))
      files.push_back((dataset / f.at("filename").get<std::string>()).string());
    const auto& saved_split = state.value("_split", nlohmann::json());
    if (dataset == dir && saved_split.is_string() && saved_split.get<std::string>() != split_name)
      throw Error(state_path.string() + ": the saved dataset is split \"" + saved_split.get<std::string>() +
                  "\", not \"" + split_name + "\"");
  } catch (const nlohmann::json::exception& e) {
    throw Error(state_path.string() + ": not the state.json datasets' save_to_disk writes (" + e.what() + ")");
  }
  if (files.empty()) throw Error(state_path.string() + ": names no data file");
  return files;
}

std::string split_name_of(const std::string& split) { return split.substr(0, split.find('[')); }

}  // namespace

const char* data_format_name(DataFormat format) {
  switch (format) {
    case DataFormat::Json: return "json";
    case DataFormat::Text: return "text";
    case DataFormat::Csv: return "csv";
    case DataFormat::Parquet: return "parquet";
    case DataFormat::Arrow: return "arrow";
  }
  return "";
}

std::vector<std::string> dataset_data_files(const ConfigNode& dataset) {
  if (!dataset.has("data_files")) return {};
  try {
    return {dataset.get<std::string>("data_files")};
  } catch (const ConfigError&) {
    return dataset.get<std::vector<std::string>>("data_files");  // a list, or the type error
  }
}

DatasetFiles resolve_dataset_files(const std::string& source, const std::vector<std::string>& data_files,
                                   const std::string& split, const std::string& revision) {
  const std::string split_name = split_name_of(split);
  std::vector<std::string> files;
  std::optional<DataFormat> format;
  auto only_train = [&](const std::string& what) {
    if (split_name != "train") throw Error("split = \"" + split + "\": " + what + " has only the \"train\" split");
  };
  if (const auto named = format_named(source)) {
    if (data_files.empty())
      throw Error("source = \"" + source + "\" needs data_files: a file, a list of files, a directory or a glob");
    only_train("data_files");
    format = named;
    files = expand_data_files(data_files, *named);
  } else if (!data_files.empty() && !fs::exists(source) && !format_of_file(source) && looks_like_hub_name(source)) {
    // A Hub dataset's own files, named relative to its snapshot, as load_dataset(repo,
    // data_files=...) reads them (torchtune's llava_instruct_dataset, the_cauldron's subsets).
    only_train("data_files");
    const std::string snapshot = hub_dataset_snapshot(source, revision);
    std::vector<std::string> entries;
    for (const auto& entry : data_files) entries.push_back((fs::path(snapshot) / entry).string());
    format = format_of_file(fs::path(data_files.front()));
    if (!format)
      throw Error("data_files = \"" + data_files.front() + "\" in source = \"" + source +
                  "\": a file's format is read from its extension: .json, .jsonl, .txt, .csv, .parquet or .arrow");
    files = expand_data_files(entries, *format);
  } else {
    if (!data_files.empty())
      throw Error(
          "data_files is read with source = \"json\", \"text\", \"csv\", \"parquet\" or \"arrow\", or a Hub "
          "dataset in the local cache; source = \"" +
          source + "\" names the data itself");
    if (fs::is_directory(source)) {
      if (auto saved = saved_dataset_files(source, split_name)) {
        files = std::move(*saved);
        format = DataFormat::Arrow;
      } else {
        std::tie(files, format) = split_files(source, split_name, source);
      }
    } else if (fs::exists(source) || format_of_file(source) || !looks_like_hub_name(source)) {
      only_train(source);
      format = format_of_file(source);
      if (!format) {
        if (!fs::exists(source)) throw Error("source = \"" + source + "\": no such file or directory");
        throw Error("source = \"" + source +
                    "\": a file's format is read from its extension: .json, .jsonl, .txt, .csv, .parquet or .arrow");
      }
      files = {source};
    } else {
      const std::string snapshot = hub_dataset_snapshot(source, revision);
      std::tie(files, format) = split_files(snapshot, split_name, "source = \"" + source + "\" (" + snapshot + ")");
    }
  }
  return DatasetFiles{std::move(files), *format};
}

}  // namespace ft
