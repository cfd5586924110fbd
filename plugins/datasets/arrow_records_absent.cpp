// A build without Apache Arrow (FTHOST_WITH_ARROW=OFF): each format says so by name.
#include "arrow_records.h"

#include <ft/errors.h>

namespace ft_ds {

namespace {

[[noreturn]] void refuse(const std::string& path, const char* format) {
  throw ft::Error(path + ": " + format +
                  " needs Apache Arrow, and this fthost was built without it (FTHOST_WITH_ARROW=OFF); rebuild with "
                  "pyarrow installed (scripts/setup.sh), or convert the data to JSON Lines");
}

}  // namespace

void append_parquet_records(const std::string& path, std::vector<nlohmann::json>&) { refuse(path, "Parquet"); }
void append_arrow_stream_records(const std::string& path, std::vector<nlohmann::json>&) {
  refuse(path, "an Arrow dataset");
}
void append_csv_records(const std::string& path, std::vector<nlohmann::json>&) { refuse(path, "CSV"); }
std::unique_ptr<RecordSource> parquet_records_on_demand(const std::string& path) { refuse(path, "Parquet"); }
std::unique_ptr<RecordSource> arrow_stream_records_on_demand(const std::string& path) {
  refuse(path, "an Arrow dataset");
}
std::unique_ptr<RecordSource> csv_records_on_demand(const std::string& path) { refuse(path, "CSV"); }

}  // namespace ft_ds
