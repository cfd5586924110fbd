// fthost.datasets.tokenized_jsonl: pre-tokenized samples, one JSON object a line:
// {"tokens": [...], "labels": [...]} with unshifted labels (-100 = not trained on).
// The whole file is parsed and checked up front so a bad line fails the run before training.
#include "dataset_components.h"

#include <ft/dataset.h>
#include <ft/errors.h>
#include <ft/text.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

class TokenizedJsonlDataset final : public ft::Dataset {
 public:
  TokenizedJsonlDataset(const std::string& path, std::int64_t max_seq_len) {
    std::ifstream in(path);
    if (!in) {
      const int err = errno;  // before building the message, which may change it
      std::string where = path;
      if (!path.empty() && path[0] != '/')
        where += " (relative to the working directory " + std::filesystem::current_path().string() + ")";
      throw ft::Error(where + ": cannot open dataset file: " + ft::errno_text(err));
    }
    std::string line;
    for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      samples_.push_back(parse_line(path, line_no, line, max_seq_len));
    }
    if (samples_.empty()) throw ft::Error(path + ": dataset has no samples");
  }
  std::size_t size() const override { return samples_.size(); }
  ft::Sample get(std::size_t index) const override { return samples_.at(index); }

 private:
  static ft::Sample parse_line(const std::string& path, std::size_t line_no, const std::string& line,
                               std::int64_t max_seq_len) {
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw ft::Error(where + "not valid JSON (" + e.what() + ")");
    }
    auto ids = [&](const char* key) {
      if (!j.is_object() || !j.contains(key) || !j[key].is_array())
        throw ft::Error(where + "expected a list of integers under \"" + key + "\"");
      std::vector<std::int64_t> out;
      out.reserve(j[key].size());
      for (const auto& v : j[key]) {
        if (!v.is_number_integer()) throw ft::Error(where + "\"" + key + "\" holds a non-integer: " + v.dump());
        out.push_back(v.get<std::int64_t>());
      }
      return out;
    };
    ft::Sample s;
    s.tokens = ids("tokens");
    s.labels = ids("labels");
    if (s.tokens.size() != s.labels.size())
      throw ft::Error(where + "\"tokens\" has " + std::to_string(s.tokens.size()) + " entries but \"labels\" has " +
                      std::to_string(s.labels.size()));
    if (s.tokens.empty()) throw ft::Error(where + "empty sample");
    for (auto t : s.tokens)
      if (t < 0) throw ft::Error(where + "negative token id " + std::to_string(t));
    if (max_seq_len > 0 && static_cast<std::int64_t>(s.tokens.size()) > max_seq_len) {
      s.tokens.resize(max_seq_len);
      s.labels.resize(max_seq_len);
      s.truncated = true;
    }
    return s;
  }
  std::vector<ft::Sample> samples_;
};

}  // namespace

namespace ft_ds {

void register_tokenized_jsonl(ft::Registry& reg) {
  ft::Schema s;
  s.required("source", ft::ValueType::String, "path of the .jsonl file")
      .optional("max_seq_len", ft::ValueType::Int, "0", "truncate longer samples (0 = keep whole)")
      .path("source", ft::PathRole::InputFile);
  reg.add<ft::Dataset>("fthost.datasets.tokenized_jsonl", std::move(s),
                       "pre-tokenized JSONL samples {\"tokens\": [...], \"labels\": [...]}",
                       [](const ft::ConfigNode& cfg, ft::Dataset::Args) {
                         return std::make_unique<TokenizedJsonlDataset>(cfg.get<std::string>("source"),
                                                                        cfg.get<std::int64_t>("max_seq_len"));
                       });
}

}  // namespace ft_ds
