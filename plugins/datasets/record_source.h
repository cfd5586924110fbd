// A dataset's records by index: all parsed in memory, or (`streaming: true`) read from their
// files when asked for, with only where each one is kept in memory: byte offsets for JSON Lines
// and text, the Arrow columns (memory-mapped for Arrow files) for Parquet, Arrow and CSV.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <memory>
#include <vector>

namespace ft_ds {

class RecordSource {
 public:
  virtual ~RecordSource() = default;
  virtual std::size_t size() const = 0;
  // Throws ft::Error naming the file when the record cannot be read (the file changed since).
  virtual nlohmann::json record(std::size_t index) const = 0;
};

std::unique_ptr<RecordSource> records_in_memory(std::vector<nlohmann::json> records);

// Records [begin, end) of `source`.
std::unique_ptr<RecordSource> slice_of(std::unique_ptr<RecordSource> source, std::size_t begin, std::size_t end);

// Several sources as one, in order.
std::unique_ptr<RecordSource> concatenation(std::vector<std::unique_ptr<RecordSource>> sources);

// JSON Lines records, each parsed when asked for; the file is scanned once for line offsets
// (and each line checked to be an object then). Errors name the file and line.
std::unique_ptr<RecordSource> json_lines_on_demand(const std::string& path);

}  // namespace ft_ds
