// Records from Apache Arrow's formats, read with Arrow's own C++ libraries: Parquet files (what
// the Hugging Face Hub stores datasets as), Arrow IPC streams (what `datasets`' save_to_disk and
// its cache write) and CSV files. Each row becomes one JSON object, column name -> value
// (strings, numbers, booleans, null, lists, structs as objects, binary as JSON binary), so every
// dataset builder reads them as it reads JSON Lines.
#pragma once

#include "record_source.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ft_ds {

// Each throws ft::Error naming the file (and the row group and column where Parquet says which)
// when it is missing, truncated, corrupt or holds a type no record can carry; nothing of a file
// that fails is appended.
void append_parquet_records(const std::string& path, std::vector<nlohmann::json>& out);
void append_arrow_stream_records(const std::string& path, std::vector<nlohmann::json>& out);
void append_csv_records(const std::string& path, std::vector<nlohmann::json>& out);

// The same rows kept as Arrow columns (an Arrow file memory-mapped, so its pages are the file's),
// each turned into a record when asked for. The file is read and validated here, once.
std::unique_ptr<RecordSource> parquet_records_on_demand(const std::string& path);
std::unique_ptr<RecordSource> arrow_stream_records_on_demand(const std::string& path);
std::unique_ptr<RecordSource> csv_records_on_demand(const std::string& path);

}  // namespace ft_ds
