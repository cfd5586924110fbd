#include "data_source.h"

#include <ft/errors.h>
#include <ft/text.h>

#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

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

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

[[noreturn]] void refuse_hub_name(const std::string& source) {
  throw ft::Error("source = \"" + source +
                  "\" is not a local file, and fthost does not download Hugging Face Hub datasets. "
                  "Pass a local path instead: export the dataset once with Python, e.g.\n"
                  "  python -c \"from datasets import load_dataset; load_dataset('" +
                  source +
                  "', split='train').to_json('data.jsonl')\"\n"
                  "then set source = \"json\" and data_files = \"data.jsonl\" (or source = \"data.jsonl\").");
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
  if (cfg.has("sample_by")) {
    spec.sample_by = cfg.get<std::string>("sample_by");
    if (spec.sample_by != "line" && spec.sample_by != "paragraph" && spec.sample_by != "document")
      cfg.fail("sample_by", "expected \"line\", \"paragraph\" or \"document\", got \"" + spec.sample_by + "\"");
  }
  if (spec.source.empty())
    cfg.fail("source", "must name a local JSON/JSONL/text file, or \"json\"/\"text\" with data_files");
  return spec;
}

std::vector<nlohmann::json> load_records(const SourceSpec& spec) {
  std::vector<std::string> files;
  std::string format;  // "json" or "text"
  if (spec.source == "json" || spec.source == "text") {
    if (spec.data_files.empty())
      throw ft::Error("source = \"" + spec.source + "\" needs data_files = \"<path>\" (the local file to read)");
    format = spec.source;
    files = spec.data_files;
  } else if (fs::exists(spec.source) || has_suffix(spec.source, ".json") || has_suffix(spec.source, ".jsonl") ||
             has_suffix(spec.source, ".txt")) {
    if (!spec.data_files.empty())
      throw ft::Error("data_files is only read with source = \"json\" or \"text\"; source = \"" + spec.source +
                      "\" is a file");
    format = has_suffix(spec.source, ".txt") ? "text" : "json";
    files = {spec.source};
  } else if (spec.source == "csv" || spec.source == "parquet" || spec.source == "arrow") {
    throw ft::Error("source = \"" + spec.source +
                    "\" is not supported; convert the data to JSON Lines and use source = \"json\"");
  } else {
    refuse_hub_name(spec.source);
  }
  std::vector<nlohmann::json> records;
  for (const auto& f : files) {
    if (fs::is_directory(f)) throw ft::Error(f + ": is a directory; name the JSON/JSONL/text file itself");
    if (format == "json")
      parse_json_records(f, records);
    else
      parse_text_records(f, spec.sample_by, records);
  }
  const auto [begin, end] = split_range(spec.split, records.size());
  if (begin == end)
    throw ft::Error("split = \"" + spec.split + "\" selects no records (the source has " +
                    std::to_string(records.size()) + ")");
  if (begin > 0 || end < records.size())
    records = std::vector<nlohmann::json>(std::make_move_iterator(records.begin() + begin),
                                          std::make_move_iterator(records.begin() + end));
  return records;
}

std::pair<std::size_t, std::size_t> split_range(const std::string& split, std::size_t n) {
  const auto bad = [&](const std::string& why) -> ft::Error {
    return ft::Error("split = \"" + split + "\": " + why +
                     " (expected \"train\", \"train[:95%]\", \"train[95%:]\" or \"train[10:200]\")");
  };
  const auto bracket = split.find('[');
  const std::string name = split.substr(0, bracket);
  if (name != "train") throw bad("a local file has only the \"train\" split");
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
