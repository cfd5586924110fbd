#include "arrow_records.h"

#include <ft/errors.h>

#include <arrow/api.h>
#include <arrow/csv/api.h>
#include <arrow/io/api.h>
#include <arrow/ipc/reader.h>
#include <parquet/arrow/reader.h>
#include <parquet/exception.h>

#include <algorithm>
#include <cmath>
#include <memory>

namespace ft_ds {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& path, const std::string& where, const arrow::Status& status) {
  throw ft::Error(path + (where.empty() ? "" : ": " + where) + ": " + status.ToString());
}

template <typename T>
T value_or_fail(arrow::Result<T> result, const std::string& path, const std::string& where) {
  if (!result.ok()) fail(path, where, result.status());
  return result.MoveValueUnsafe();
}

json value_at(const arrow::Array& array, std::int64_t i);

template <typename ListArray>
json list_at(const ListArray& list, std::int64_t i) {
  json items = json::array();
  const auto& values = list.values();
  const auto begin = list.value_offset(i), end = begin + list.value_length(i);
  for (auto k = begin; k < end; ++k) items.push_back(value_at(*values, k));
  return items;
}

template <typename BinaryArray>
json binary_at(const BinaryArray& array, std::int64_t i) {
  const auto view = array.GetView(i);
  return json::binary(std::vector<std::uint8_t>(view.begin(), view.end()));
}

// One cell as JSON. Types a record cannot carry are refused by name, not converted silently.
json value_at(const arrow::Array& array, std::int64_t i) {
  if (array.IsNull(i)) return nullptr;
  switch (array.type_id()) {
    case arrow::Type::NA: return nullptr;
    case arrow::Type::BOOL: return static_cast<const arrow::BooleanArray&>(array).Value(i);
    case arrow::Type::INT8: return static_cast<const arrow::Int8Array&>(array).Value(i);
    case arrow::Type::INT16: return static_cast<const arrow::Int16Array&>(array).Value(i);
    case arrow::Type::INT32: return static_cast<const arrow::Int32Array&>(array).Value(i);
    case arrow::Type::INT64: return static_cast<const arrow::Int64Array&>(array).Value(i);
    case arrow::Type::UINT8: return static_cast<const arrow::UInt8Array&>(array).Value(i);
    case arrow::Type::UINT16: return static_cast<const arrow::UInt16Array&>(array).Value(i);
    case arrow::Type::UINT32: return static_cast<const arrow::UInt32Array&>(array).Value(i);
    case arrow::Type::UINT64: return static_cast<const arrow::UInt64Array&>(array).Value(i);
    case arrow::Type::FLOAT: return static_cast<const arrow::FloatArray&>(array).Value(i);
    case arrow::Type::DOUBLE: return static_cast<const arrow::DoubleArray&>(array).Value(i);
    case arrow::Type::STRING: return std::string(static_cast<const arrow::StringArray&>(array).GetView(i));
    case arrow::Type::LARGE_STRING: return std::string(static_cast<const arrow::LargeStringArray&>(array).GetView(i));
    case arrow::Type::STRING_VIEW: return std::string(static_cast<const arrow::StringViewArray&>(array).GetView(i));
    case arrow::Type::BINARY: return binary_at(static_cast<const arrow::BinaryArray&>(array), i);
    case arrow::Type::LARGE_BINARY: return binary_at(static_cast<const arrow::LargeBinaryArray&>(array), i);
    case arrow::Type::LIST: return list_at(static_cast<const arrow::ListArray&>(array), i);
    case arrow::Type::LARGE_LIST: return list_at(static_cast<const arrow::LargeListArray&>(array), i);
    case arrow::Type::FIXED_SIZE_LIST: return list_at(static_cast<const arrow::FixedSizeListArray&>(array), i);
    case arrow::Type::STRUCT: {
      const auto& s = static_cast<const arrow::StructArray&>(array);
      json object = json::object();
      for (int f = 0; f < s.num_fields(); ++f) object[s.type()->field(f)->name()] = value_at(*s.field(f), i);
      return object;
    }
    case arrow::Type::DICTIONARY: {
      const auto& d = static_cast<const arrow::DictionaryArray&>(array);
      return value_at(*d.dictionary(), d.GetValueIndex(i));
    }
    default: throw ft::Error("a column of type " + array.type()->ToString() + ", which no record holds");
  }
}

using Batches = std::vector<std::shared_ptr<arrow::RecordBatch>>;

// One row of `batch` as a record.
json row_of(const arrow::RecordBatch& batch, std::int64_t r, const std::string& path, const std::string& where) {
  json row = json::object();
  const auto& schema = *batch.schema();
  for (int c = 0; c < batch.num_columns(); ++c) {
    try {
      row[schema.field(c)->name()] = value_at(*batch.column(c), r);
    } catch (const ft::Error& e) {
      throw ft::Error(path + (where.empty() ? "" : ": " + where) + ": column '" + schema.field(c)->name() +
                      "': " + e.what());
    }
  }
  return row;
}

// A corrupt file fails here, not in a read past its end; a column no record can hold too.
void check_batch(const arrow::RecordBatch& batch, const std::string& path, const std::string& where) {
  const arrow::Status valid = batch.ValidateFull();
  if (!valid.ok()) fail(path, where, valid);
  if (batch.num_rows() > 0) row_of(batch, 0, path, where);
}

std::shared_ptr<arrow::RecordBatch> batch_of(const arrow::Table& table, const std::string& path,
                                             const std::string& where) {
  auto batch = value_or_fail(table.CombineChunksToBatch(), path, where);
  check_batch(*batch, path, where);
  return batch;
}

std::shared_ptr<arrow::io::ReadableFile> open_file(const std::string& path) {
  return value_or_fail(arrow::io::ReadableFile::Open(path), path, "cannot open");
}

// Each batch's place in messages: "row group N" or "record batch N".
struct NamedBatches {
  Batches batches;
  std::vector<std::string> names;
};

NamedBatches parquet_batches(const std::string& path) {
  NamedBatches out;
  try {
    auto reader = value_or_fail(parquet::arrow::OpenFile(open_file(path), arrow::default_memory_pool()), path,
                                "not a readable Parquet file");
    std::shared_ptr<arrow::Schema> schema;
    if (const auto status = reader->GetSchema(&schema); !status.ok()) fail(path, "schema", status);
    for (int g = 0; g < reader->num_row_groups(); ++g) {
      const std::string group = "row group " + std::to_string(g);
      // Column by column, so a damaged chunk names its column.
      std::vector<std::shared_ptr<arrow::ChunkedArray>> columns;
      for (int c = 0; c < schema->num_fields(); ++c) {
        std::shared_ptr<arrow::ChunkedArray> column;
        const auto status = reader->RowGroup(g)->Column(c)->Read(&column);
        if (!status.ok()) fail(path, group + ", column '" + schema->field(c)->name() + "'", status);
        columns.push_back(std::move(column));
      }
      out.batches.push_back(batch_of(*arrow::Table::Make(schema, columns), path, group));
      out.names.push_back(group);
    }
  } catch (const parquet::ParquetException& e) {
    throw ft::Error(path + ": not a readable Parquet file: " + e.what());
  }
  return out;
}

// Memory-mapped: the batches point into the file's pages, which the kernel can drop and reread.
NamedBatches arrow_stream_batches(const std::string& path) {
  NamedBatches out;
  auto file = value_or_fail(arrow::io::MemoryMappedFile::Open(path, arrow::io::FileMode::READ), path, "cannot open");
  auto reader = value_or_fail(arrow::ipc::RecordBatchStreamReader::Open(file), path,
                              "not an Arrow IPC stream (as datasets' save_to_disk writes)");
  for (int b = 0;; ++b) {
    std::shared_ptr<arrow::RecordBatch> batch;
    const std::string where = "record batch " + std::to_string(b);
    if (const auto status = reader->ReadNext(&batch); !status.ok()) fail(path, where, status);
    if (!batch) break;
    check_batch(*batch, path, where);
    out.batches.push_back(std::move(batch));
    out.names.push_back(where);
  }
  return out;
}

NamedBatches csv_batches(const std::string& path) {
  auto reader = value_or_fail(arrow::csv::TableReader::Make(
                                  arrow::io::default_io_context(), open_file(path), arrow::csv::ReadOptions::Defaults(),
                                  arrow::csv::ParseOptions::Defaults(), arrow::csv::ConvertOptions::Defaults()),
                              path, "not a readable CSV file");
  const auto table = value_or_fail(reader->Read(), path, "not a readable CSV file");
  return {{batch_of(*table, path, "")}, {""}};
}

void append_all(const NamedBatches& named, const std::string& path, std::vector<json>& out) {
  std::vector<json> rows;
  for (std::size_t b = 0; b < named.batches.size(); ++b)
    for (std::int64_t r = 0; r < named.batches[b]->num_rows(); ++r)
      rows.push_back(row_of(*named.batches[b], r, path, named.names[b]));
  for (auto& row : rows) out.push_back(std::move(row));
}

class ArrowRowsOnDemand final : public RecordSource {
 public:
  ArrowRowsOnDemand(std::string path, NamedBatches named) : path_(std::move(path)), named_(std::move(named)) {
    for (const auto& b : named_.batches)
      ends_.push_back((ends_.empty() ? 0 : ends_.back()) + static_cast<std::size_t>(b->num_rows()));
  }
  std::size_t size() const override { return ends_.empty() ? 0 : ends_.back(); }
  json record(std::size_t index) const override {
    const auto b = static_cast<std::size_t>(std::upper_bound(ends_.begin(), ends_.end(), index) - ends_.begin());
    if (b == ends_.size())
      throw ft::Error(path_ + ": record " + std::to_string(index) + " out of range (" + std::to_string(size()) + ")");
    const std::size_t first = b == 0 ? 0 : ends_[b - 1];
    return row_of(*named_.batches[b], static_cast<std::int64_t>(index - first), path_, named_.names[b]);
  }

 private:
  std::string path_;
  NamedBatches named_;
  std::vector<std::size_t> ends_;
};

}  // namespace

void append_parquet_records(const std::string& path, std::vector<json>& out) {
  append_all(parquet_batches(path), path, out);
}
void append_arrow_stream_records(const std::string& path, std::vector<json>& out) {
  append_all(arrow_stream_batches(path), path, out);
}
void append_csv_records(const std::string& path, std::vector<json>& out) { append_all(csv_batches(path), path, out); }

std::unique_ptr<RecordSource> parquet_records_on_demand(const std::string& path) {
  return std::make_unique<ArrowRowsOnDemand>(path, parquet_batches(path));
}
std::unique_ptr<RecordSource> arrow_stream_records_on_demand(const std::string& path) {
  return std::make_unique<ArrowRowsOnDemand>(path, arrow_stream_batches(path));
}
std::unique_ptr<RecordSource> csv_records_on_demand(const std::string& path) {
  return std::make_unique<ArrowRowsOnDemand>(path, csv_batches(path));
}

}  // namespace ft_ds
