// The data files of a dataset, named as `datasets.load_dataset` names them by a dataset table's
// `source` (+ `data_files`, `split`, `revision`): a local file (JSON, JSON Lines, text, CSV,
// Parquet, Arrow), a format with data_files (a file, a list, a directory, a glob), a directory of
// data files or one `save_to_disk` wrote, or a Hugging Face Hub dataset in the local cache
// (nothing is downloaded). Without LibTorch or Arrow: the datasets plugin and the host's
// pre-flight check find the same files. Reading them is the datasets plugin's.
#pragma once

#include <ft/config.h>
#include <ft/export.h>

#include <string>
#include <vector>

namespace ft {

enum class DataFormat { Json, Text, Csv, Parquet, Arrow };

FT_API const char* data_format_name(DataFormat format);

struct DatasetFiles {
  std::vector<std::string> files;  // in the order their records come
  DataFormat format;
};

// The files `source` names for `split` ("train", "test[:95%]": the slice is not applied here),
// with `data_files` when source is a format name, `revision` for a Hub dataset. Throws
// ft::Error naming the source and what was expected (for a Hub dataset not in the cache: every
// place searched and the command that downloads it). Files are not opened.
FT_API DatasetFiles resolve_dataset_files(const std::string& source, const std::vector<std::string>& data_files,
                                          const std::string& split, const std::string& revision);

// A dataset table's `data_files`: a string or a list of them (empty when absent).
FT_API std::vector<std::string> dataset_data_files(const ConfigNode& dataset);

}  // namespace ft
