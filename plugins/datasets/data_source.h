// Where a dataset's records come from, named by torchtune's `source` (+ `data_files`, `split`)
// keys as `datasets.load_dataset` reads them: a local file (JSON, JSON Lines, text, CSV, Parquet,
// Arrow), a format with data_files (a file, a list, a directory, a glob), a directory of data
// files or one `save_to_disk` wrote, or a Hugging Face Hub dataset in the local cache (nothing is
// downloaded). docs/datasets.md.
#pragma once

#include <ft/config.h>
#include <ft/errors.h>

#include "record_source.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ft_ds {

struct SourceSpec {
  std::string source;                   // a path, a format name with data_files, or a Hub dataset
  std::vector<std::string> data_files;  // for source = "json" / "text" / "csv" / "parquet" / "arrow"
  std::string split = "train";          // "train", "test[:95%]", "train[10:200]", ...
  std::string revision = "main";        // a Hub dataset's branch, tag or commit in the cache
  bool streaming = false;               // records read from their files when drawn
  std::string sample_by = "line";       // text files: "line", "paragraph" or "document"
};

// Reads `source`, `data_files`, `split`, `revision` (and `sample_by` when present) from a dataset
// table.
SourceSpec source_spec(const ft::ConfigNode& cfg);

// The records of the split: JSON objects (a Parquet, Arrow or CSV row is one, column -> value);
// text files give {"text": ...} records. Parsed into memory, or with `streaming` read when
// asked for (JSON Lines, Parquet, Arrow, CSV; a JSON array or text file is still parsed whole,
// with a warning). Errors name the file (and line, or row group and column) and what was
// expected.
std::unique_ptr<RecordSource> load_records(const SourceSpec& spec);

// `source = "..."` (with data_files and split when given), for errors about its records.
std::string describe_source(const SourceSpec& spec);

// Runs `build`, prefixing an ft::Error it throws about a record with describe_source(spec).
template <typename Build>
auto with_source_in_errors(const SourceSpec& spec, Build build) -> decltype(build()) {
  try {
    return build();
  } catch (const ft::Error& e) {
    throw ft::Error(describe_source(spec) + ": " + e.what());
  }
}

// [begin, end) of `split`'s slice over `n` records, as Hugging Face `datasets` slices
// ("train[:95%]"); the split's name chooses the records before.
std::pair<std::size_t, std::size_t> split_range(const std::string& split, std::size_t n);

}  // namespace ft_ds
