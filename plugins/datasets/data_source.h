// Where a text dataset's records come from: a local JSON / JSONL / text file named by torchtune's
// `source` (+ `data_files`) keys, sliced by `split`. Hugging Face Hub names are refused with
// instructions, since nothing is downloaded.
#pragma once

#include <ft/config.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ft_ds {

struct SourceSpec {
  std::string source;                   // a file path, or "json" / "text" with data_files
  std::vector<std::string> data_files;  // for source = "json" / "text"
  std::string split = "train";          // "train", "train[:95%]", "train[10:200]", ...
  std::string sample_by = "line";       // text files: "line", "paragraph" or "document"
};

// Reads `source`, `data_files`, `split` (and `sample_by` when present) from a dataset table.
SourceSpec source_spec(const ft::ConfigNode& cfg);

// The records of the split: JSON objects; text files give {"text": ...} records.
// Errors name the file (and line) and what was expected.
std::vector<nlohmann::json> load_records(const SourceSpec& spec);

// [begin, end) of `split` over `n` records, as Hugging Face `datasets` slices ("train[:95%]").
std::pair<std::size_t, std::size_t> split_range(const std::string& split, std::size_t n);

}  // namespace ft_ds
