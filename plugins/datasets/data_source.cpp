#include "data_source.h"

#include "arrow_records.h"

#include <ft/dataset_files.h>
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

using Format = ft::DataFormat;

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

}  // namespace

SourceSpec source_spec(const ft::ConfigNode& cfg) {
  SourceSpec spec;
  spec.source = cfg.get<std::string>("source");
  spec.data_files = ft::dataset_data_files(cfg);
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
  const auto [files, format] = ft::resolve_dataset_files(spec.source, spec.data_files, spec.split, spec.revision);
  std::unique_ptr<RecordSource> records;
  if (spec.streaming) {
    std::vector<std::unique_ptr<RecordSource>> parts;
    for (const auto& f : files) parts.push_back(records_on_demand(f, format, spec.sample_by));
    records = concatenation(std::move(parts));
  } else {
    std::vector<nlohmann::json> all;
    for (const auto& f : files) append_records(f, format, spec.sample_by, all);
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
