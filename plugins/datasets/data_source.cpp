#include "data_source.h"

#include "arrow_records.h"
#include "hub_cache.h"

#include <ft/errors.h>
#include <ft/log.h>
#include <ft/text.h>

#include <glob.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

namespace ft_ds {

namespace {

namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;  // before anything below allocates
    std::string where = path;
    if (!path.empty() && path[0] != '/')
      where += " (relative to the working directory " + fs::current_path().string() + ")";
    throw ft::Error(where + ": cannot open dataset file: " + ft::errno_text(err));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void parse_json_records(const std::string& path, std::vector<nlohmann::json>& out) {
  const std::string text = read_file(path);
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw ft::Error(path + ": dataset file is empty");
  if (text[first] == '[') {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw ft::Error(path + ": not valid JSON (" + e.what() + ")");
    }
    for (std::size_t i = 0; i < j.size(); ++i) {
      if (!j[i].is_object()) throw ft::Error(path + ": record " + std::to_string(i) + " is not a JSON object");
      out.push_back(std::move(j[i]));
    }
    return;
  }
  // JSON Lines (what `Dataset.to_json` writes): one object a line.
  std::istringstream in(text);
  std::string line;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      auto j = nlohmann::json::parse(line);
      if (!j.is_object()) throw ft::Error(path + ":" + std::to_string(line_no) + ": expected a JSON object");
      out.push_back(std::move(j));
    } catch (const nlohmann::json::exception& e) {
      throw ft::Error(path + ":" + std::to_string(line_no) + ": not valid JSON (" + e.what() +
                      "); expected a JSON array of objects or one object a line");
    }
  }
}

void parse_text_records(const std::string& path, const std::string& sample_by, std::vector<nlohmann::json>& out) {
  const std::string text = read_file(path);
  if (sample_by == "document") {
    out.push_back({{"text", text}});
    return;
  }
  const std::string separator = sample_by == "paragraph" ? "\n\n" : "\n";
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(separator, pos);
    if (end == std::string::npos) end = text.size();
    std::string piece = text.substr(pos, end - pos);
    if (!piece.empty() && piece.back() == '\r') piece.pop_back();
    // Blank lines carry no text to learn from.
    if (piece.find_first_not_of(" \t\r\n") != std::string::npos) out.push_back({{"text", std::move(piece)}});
    pos = end + separator.size();
  }
}

enum class Format { Json, Text, Csv, Parquet, Arrow };

// source = "json" / "text" / "csv" / "parquet" / "arrow": the format of data_files.
std::optional<Format> format_named(const std::string& name) {
  if (name == "json") return Format::Json;
  if (name == "text") return Format::Text;
  if (name == "csv") return Format::Csv;
  if (name == "parquet") return Format::Parquet;
  if (name == "arrow") return Format::Arrow;
  return std::nullopt;
}

std::optional<Format> format_of_file(const fs::path& path) {
  const std::string ext = path.extension().string();
  if (ext == ".json" || ext == ".jsonl") return Format::Json;
  if (ext == ".txt") return Format::Text;
  if (ext == ".csv") return Format::Csv;
  if (ext == ".parquet") return Format::Parquet;
  if (ext == ".arrow") return Format::Arrow;
  return std::nullopt;
}

const char* format_name(Format f) {
  switch (f) {
    case Format::Json: return "json";
    case Format::Text: return "text";
    case Format::Csv: return "csv";
    case Format::Parquet: return "parquet";
    case Format::Arrow: return "arrow";
  }
  return "";
}

// The metadata files `datasets` and the Hub keep beside the data, never records.
bool is_metadata_file(const std::string& name) {
  return name == "dataset_info.json" || name == "dataset_infos.json" || name == "dataset_dict.json" ||
         name == "state.json";
}

// The files of `dir` (recursively, in path order) in `format`; hidden entries and metadata
// files are skipped.
std::vector<std::string> files_in(const fs::path& dir, std::optional<Format> format) {
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
std::vector<std::string> expand_data_files(const std::vector<std::string>& entries, Format format) {
  std::vector<std::string> files;
  for (const auto& entry : entries) {
    if (entry.find_first_of("*?[") != std::string::npos) {
      glob_t matches{};
      const int status = ::glob(entry.c_str(), 0, nullptr, &matches);
      for (std::size_t i = 0; status == 0 && i < matches.gl_pathc; ++i) files.emplace_back(matches.gl_pathv[i]);
      ::globfree(&matches);
      if (status != 0) throw ft::Error("data_files = \"" + entry + "\": the pattern matches no file");
    } else if (fs::is_directory(entry)) {
      auto in_dir = files_in(entry, format);
      if (in_dir.empty())
        throw ft::Error("data_files = \"" + entry + "\": the directory has no " + format_name(format) + " file");
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
std::pair<std::vector<std::string>, Format> split_files(const fs::path& dir, const std::string& name,
                                                        const std::string& what) {
  for (Format f : {Format::Parquet, Format::Arrow, Format::Json, Format::Csv, Format::Text}) {
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
      throw ft::Error(what + " has no split \"" + name + "\" (its " + format_name(f) + " files make the splits " +
                      known + ")");
    }
    return {by_split.at(name), f};
  }
  throw ft::Error(what + " has no data file (.parquet, .arrow, .json, .jsonl, .csv or .txt)");
}

// A directory `datasets`' save_to_disk wrote: a Dataset (state.json naming its Arrow files) or a
// DatasetDict (dataset_dict.json, one such directory per split).
std::optional<std::vector<std::string>> saved_dataset_files(const fs::path& dir, const std::string& split_name) {
  fs::path dataset = dir;
  if (fs::exists(dir / "dataset_dict.json")) {
    dataset = dir / split_name;
    if (!fs::exists(dataset / "state.json"))
      throw ft::Error(dir.string() + ": this DatasetDict (dataset_dict.json) has no split \"" + split_name + "\"");
  } else if (!fs::exists(dir / "state.json")) {
    return std::nullopt;
  }
  const fs::path state_path = dataset / "state.json";
  std::vector<std::string> files;
  try {
    const auto state = nlohmann::json::parse(read_file(state_path.string()));
    for (const auto& f : state.at("_data_files"))
      files.push_back((dataset / f.at("filename").get<std::string>()).string());
    const auto& saved_split = state.value("_split", nlohmann::json());
    if (dataset == dir && saved_split.is_string() && saved_split.get<std::string>() != split_name)
      throw ft::Error(state_path.string() + ": the saved dataset is split \"" + saved_split.get<std::string>() +
                      "\", not \"" + split_name + "\"");
  } catch (const nlohmann::json::exception& e) {
    throw ft::Error(state_path.string() + ": not the state.json datasets' save_to_disk writes (" + e.what() + ")");
  }
  if (files.empty()) throw ft::Error(state_path.string() + ": names no data file");
  return files;
}

void check_data_file(const std::string& file) {
  if (fs::is_directory(file)) throw ft::Error(file + ": is a directory; name the data file itself");
  if (!fs::exists(file)) throw ft::Error(file + ": no such dataset file");
}

void append_records(const std::string& file, Format format, const std::string& sample_by,
                    std::vector<nlohmann::json>& out) {
  check_data_file(file);
  switch (format) {
    case Format::Json: parse_json_records(file, out); break;
    case Format::Text: parse_text_records(file, sample_by, out); break;
    case Format::Csv: append_csv_records(file, out); break;
    case Format::Parquet: append_parquet_records(file, out); break;
    case Format::Arrow: append_arrow_stream_records(file, out); break;
  }
}

bool is_json_array(const std::string& file) {
  std::ifstream in(file);
  char c = 0;
  while (in.get(c) && std::isspace(static_cast<unsigned char>(c))) {
  }
  return c == '[';
}

// One file's records read when asked for; a JSON array or a text file parsed whole.
std::unique_ptr<RecordSource> records_on_demand(const std::string& file, Format format, const std::string& sample_by) {
  check_data_file(file);
  switch (format) {
    case Format::Json:
      if (!is_json_array(file)) return json_lines_on_demand(file);
      break;
    case Format::Parquet: return parquet_records_on_demand(file);
    case Format::Arrow: return arrow_stream_records_on_demand(file);
    case Format::Csv: return csv_records_on_demand(file);
    case Format::Text: break;
  }
  ft::log::warn(
      "streaming: {} is {}, which is parsed whole; JSON Lines, Parquet, Arrow and CSV are read record by "
      "record",
      file, format == Format::Text ? "a text file" : "a JSON array");
  std::vector<nlohmann::json> records;
  append_records(file, format, sample_by, records);
  return records_in_memory(std::move(records));
}

std::string split_name_of(const std::string& split) { return split.substr(0, split.find('[')); }

}  // namespace

SourceSpec source_spec(const ft::ConfigNode& cfg) {
  SourceSpec spec;
  spec.source = cfg.get<std::string>("source");
  if (cfg.has("data_files")) {
    try {
      spec.data_files = {cfg.get<std::string>("data_files")};
    } catch (const ft::ConfigError&) {
      spec.data_files = cfg.get<std::vector<std::string>>("data_files");  // a list, or the type error
    }
  }
  spec.split = cfg.get<std::string>("split", "train");
  spec.revision = cfg.get<std::string>("revision", "main");
  spec.streaming = cfg.get<bool>("streaming", false);
  if (cfg.has("sample_by")) {
    spec.sample_by = cfg.get<std::string>("sample_by");
    if (spec.sample_by != "line" && spec.sample_by != "paragraph" && spec.sample_by != "document")
      cfg.fail("sample_by", "expected \"line\", \"paragraph\" or \"document\", got \"" + spec.sample_by + "\"");
  }
  if (spec.source.empty())
    cfg.fail("source",
             "must name a local file or directory, \"json\" / \"text\" / \"csv\" / \"parquet\" / \"arrow\" with "
             "data_files, or a Hugging Face Hub dataset in the local cache");
  return spec;
}

std::string describe_source(const SourceSpec& spec) {
  std::string text = "source = \"" + spec.source + "\"";
  if (!spec.data_files.empty()) {
    text += ", data_files = [";
    for (std::size_t i = 0; i < spec.data_files.size(); ++i) text += (i ? ", \"" : "\"") + spec.data_files[i] + "\"";
    text += "]";
  }
  if (spec.split != "train") text += ", split = \"" + spec.split + "\"";
  return text;
}

std::unique_ptr<RecordSource> load_records(const SourceSpec& spec) {
  const std::string split_name = split_name_of(spec.split);
  std::vector<std::string> files;
  std::optional<Format> format;
  auto only_train = [&](const std::string& what) {
    if (split_name != "train")
      throw ft::Error("split = \"" + spec.split + "\": " + what + " has only the \"train\" split");
  };
  if (const auto named = format_named(spec.source)) {
    if (spec.data_files.empty())
      throw ft::Error("source = \"" + spec.source +
                      "\" needs data_files: a file, a list of files, a directory or a glob");
    only_train("data_files");
    format = named;
    files = expand_data_files(spec.data_files, *named);
  } else {
    if (!spec.data_files.empty())
      throw ft::Error(
          "data_files is read with source = \"json\", \"text\", \"csv\", \"parquet\" or \"arrow\"; source = \"" +
          spec.source + "\" names the data itself");
    if (fs::is_directory(spec.source)) {
      if (auto saved = saved_dataset_files(spec.source, split_name)) {
        files = std::move(*saved);
        format = Format::Arrow;
      } else {
        std::tie(files, format) = split_files(spec.source, split_name, spec.source);
      }
    } else if (fs::exists(spec.source) || format_of_file(spec.source) || !looks_like_hub_name(spec.source)) {
      only_train(spec.source);
      format = format_of_file(spec.source);
      if (!format) {
        if (!fs::exists(spec.source)) throw ft::Error("source = \"" + spec.source + "\": no such file or directory");
        throw ft::Error(
            "source = \"" + spec.source +
            "\": a file's format is read from its extension: .json, .jsonl, .txt, .csv, .parquet or .arrow");
      }
      files = {spec.source};
    } else {
      const std::string snapshot = hub_dataset_snapshot(spec.source, spec.revision);
      std::tie(files, format) =
          split_files(snapshot, split_name, "source = \"" + spec.source + "\" (" + snapshot + ")");
    }
  }
  std::unique_ptr<RecordSource> records;
  if (spec.streaming) {
    std::vector<std::unique_ptr<RecordSource>> parts;
    for (const auto& f : files) parts.push_back(records_on_demand(f, *format, spec.sample_by));
    records = concatenation(std::move(parts));
  } else {
    std::vector<nlohmann::json> all;
    for (const auto& f : files) append_records(f, *format, spec.sample_by, all);
    records = records_in_memory(std::move(all));
  }
  const std::size_t n = records->size();
  const auto [begin, end] = split_range(spec.split, n);
  if (begin == end)
    throw ft::Error("split = \"" + spec.split + "\" selects no records (the source has " + std::to_string(n) + ")");
  return slice_of(std::move(records), begin, end);
}

std::pair<std::size_t, std::size_t> split_range(const std::string& split, std::size_t n) {
  const auto bad = [&](const std::string& why) -> ft::Error {
    return ft::Error("split = \"" + split + "\": " + why +
                     " (expected \"train\", \"train[:95%]\", \"train[95%:]\" or \"train[10:200]\")");
  };
  const auto bracket = split.find('[');
  if (split.substr(0, bracket).empty()) throw bad("no split name");
  if (bracket == std::string::npos) return {0, n};
  if (split.back() != ']') throw bad("missing ']'");
  const std::string inner = split.substr(bracket + 1, split.size() - bracket - 2);
  const auto colon = inner.find(':');
  if (colon == std::string::npos) throw bad("missing ':'");
  // Hugging Face rounds percent boundaries to the closest record.
  auto boundary = [&](std::string b, std::size_t fallback) -> std::size_t {
    if (b.empty()) return fallback;
    const bool percent = b.back() == '%';
    if (percent) b.pop_back();
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(b, &used);
    } catch (const std::exception&) {
      throw bad("\"" + b + "\" is not a number");
    }
    if (used != b.size()) throw bad("\"" + b + "\" is not a number");
    double index = percent ? std::round(v * static_cast<double>(n) / 100.0) : v;
    if (index < 0) index += static_cast<double>(n);
    if (index < 0) index = 0;
    return std::min(n, static_cast<std::size_t>(index));
  };
  const std::size_t begin = boundary(inner.substr(0, colon), 0), end = boundary(inner.substr(colon + 1), n);
  return {begin, std::max(begin, end)};
}

}  // namespace ft_ds
