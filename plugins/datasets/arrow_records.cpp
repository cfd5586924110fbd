#include "arrow_records.h"

#include <ft/errors.h>

#include <arrow/api.h>
#include <arrow/csv/api.h>
#include <arrow/io/api.h>
#include <arrow/ipc/reader.h>
#include <parquet/arrow/reader.h>
#include <parquet/exception.h>

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
    case arrow::Type::LARGE_STRING:
      return std::string(static_cast<const arrow::LargeStringArray&>(array).GetView(i));
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

// Appends each row of `batch` to `out`, as one object.
void append_rows(const arrow::RecordBatch& batch, const std::string& path, const std::string& where,
                 std::vector<json>& out) {
  const arrow::Status valid = batch.ValidateFull();  // a corrupt file fails here, not in a read past its end
  if (!valid.ok()) fail(path, where, valid);
  const auto& schema = *batch.schema();
  std::vector<json> rows(static_cast<std::size_t>(batch.num_rows()), json::object());
  for (int c = 0; c < batch.num_columns(); ++c) {
    const arrow::Array& column = *batch.column(c);
    const std::string& name = schema.field(c)->name();
    try {
      for (std::int64_t r = 0; r < batch.num_rows(); ++r) rows[static_cast<std::size_t>(r)][name] = value_at(column, r);
    } catch (const ft::Error& e) {
      throw ft::Error(path + (where.empty() ? "" : ": " + where) + ": column '" + name + "': " + e.what());
    }
  }
  for (auto& row : rows) out.push_back(std::move(row));
}

void append_table(const arrow::Table& table, const std::string& path, const std::string& where,
                  std::vector<json>& out) {
  const auto batch = value_or_fail(table.CombineChunksToBatch(), path, where);
  append_rows(*batch, path, where, out);
}

std::shared_ptr<arrow::io::ReadableFile> open_file(const std::string& path) {
  return value_or_fail(arrow::io::ReadableFile::Open(path), path, "cannot open");
}

}  // namespace

void append_parquet_records(const std::string& path, std::vector<json>& out) {
  std::vector<json> rows;
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
      append_table(*arrow::Table::Make(schema, columns), path, group, rows);
    }
  } catch (const parquet::ParquetException& e) {
    throw ft::Error(path + ": not a readable Parquet file: " + e.what());
  }
  for (auto& row : rows) out.push_back(std::move(row));
}

void append_arrow_stream_records(const std::string& path, std::vector<json>& out) {
  std::vector<json> rows;
  auto reader = value_or_fail(arrow::ipc::RecordBatchStreamReader::Open(open_file(path)), path,
                              "not an Arrow IPC stream (as datasets' save_to_disk writes)");
  for (int b = 0;; ++b) {
    std::shared_ptr<arrow::RecordBatch> batch;
    const std::string where = "record batch " + std::to_string(b);
    if (const auto status = reader->ReadNext(&batch); !status.ok()) fail(path, where, status);
    if (!batch) break;
    append_rows(*batch, path, where, rows);
  }
  for (auto& row : rows) out.push_back(std::move(row));
}

void append_csv_records(const std::string& path, std::vector<json>& out) {
  std::vector<json> rows;
  auto reader = value_or_fail(
      arrow::csv::TableReader::Make(arrow::io::default_io_context(), open_file(path),
                                    arrow::csv::ReadOptions::Defaults(), arrow::csv::ParseOptions::Defaults(),
                                    arrow::csv::ConvertOptions::Defaults()),
      path, "not a readable CSV file");
  const auto table = value_or_fail(reader->Read(), path, "not a readable CSV file");
  append_table(*table, path, "", rows);
  for (auto& row : rows) out.push_back(std::move(row));
}

}  // namespace ft_ds
