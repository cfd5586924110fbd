#include "safetensors.h"

#include <ft/checkpoint_files.h>
#include <ft/durable_files.h>
#include <ft/errors.h>
#include <ft/text.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

// The format stores little-endian data; this code maps and writes the host's bytes unchanged.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors I/O assumes a little-endian host");

namespace ft_checkpointers {

namespace fs = std::filesystem;

namespace {

struct DtypeEntry {
  const char* code;
  c10::ScalarType type;
};

constexpr DtypeEntry kDtypes[] = {
    {"F64", c10::ScalarType::Double},    {"F32", c10::ScalarType::Float}, {"F16", c10::ScalarType::Half},
    {"BF16", c10::ScalarType::BFloat16}, {"I64", c10::ScalarType::Long},  {"I32", c10::ScalarType::Int},
    {"I16", c10::ScalarType::Short},     {"I8", c10::ScalarType::Char},   {"U8", c10::ScalarType::Byte},
    {"BOOL", c10::ScalarType::Bool},
};

// A JSON value for an error message, cut short so a huge header does not flood the terminal.
std::string excerpt(const nlohmann::json& value) {
  std::string text = value.dump();
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

// a * b, or nullopt on overflow.
std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return std::nullopt;
  return a * b;
}

std::uint64_t tensor_bytes(const ft::NamedTensor& t) {
  if (!t.tensor.defined()) throw ft::Error("tensor \"" + t.name + "\" is undefined");
  return static_cast<std::uint64_t>(t.tensor.numel()) * t.tensor.element_size();
}

[[noreturn]] void fail_in(const std::string& path, const std::string& message) {
  throw ft::Error(path + ": " + message);
}

}  // namespace

std::optional<c10::ScalarType> scalar_type_from_safetensors(std::string_view code) {
  for (const auto& d : kDtypes)
    if (code == d.code) return d.type;
  return std::nullopt;
}

std::string safetensors_dtype_code(c10::ScalarType type) {
  for (const auto& d : kDtypes)
    if (type == d.type) return d.code;
  throw ft::Error(std::string("dtype ") + c10::toString(type) +
                  " cannot be stored (supported: " + supported_safetensors_dtypes() + ")");
}

std::string supported_safetensors_dtypes() {
  std::string out;
  for (const auto& d : kDtypes) out += (out.empty() ? "" : ", ") + std::string(d.code);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reader

struct SafetensorsFile::Mapping {
  void* address = MAP_FAILED;
  std::size_t size = 0;
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (address != MAP_FAILED) ::munmap(address, size);
  }
};

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    fail_in(path_, "cannot open safetensors file: " + ft::errno_text(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail_in(path_, "not a regular file");
  }
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  if (file_size < 8) {
    ::close(fd);
    fail_in(path_,
            "not a safetensors file: " + std::to_string(file_size) + " bytes, shorter than the 8-byte header length");
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->address = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);  // the mapping stays valid without the descriptor
  if (mapping->address == MAP_FAILED) fail_in(path_, "cannot memory-map: " + ft::errno_text(map_errno));
  mapping->size = file_size;
  mapping_ = mapping;
  const auto* bytes = static_cast<const unsigned char*>(mapping->address);

  std::uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | bytes[i];
  if (header_size > kMaxHeaderBytes)
    fail_in(path_, "header length " + std::to_string(header_size) + " exceeds the limit of " +
                       std::to_string(kMaxHeaderBytes) + " bytes (not a safetensors file?)");
  if (header_size > file_size - 8)
    fail_in(path_, "header length " + std::to_string(header_size) + " runs past the end of the file (" +
                       std::to_string(file_size) + " bytes)");
  buffer_ = bytes + 8 + header_size;
  buffer_size_ = file_size - 8 - header_size;

  const char* header_begin = reinterpret_cast<const char*>(bytes + 8);
  if (header_size == 0 || header_begin[0] != '{') fail_in(path_, "header does not start with '{': not a JSON object");
  // nlohmann keeps the last of duplicate keys silently; the format forbids duplicates, so the
  // parse callback records them.
  std::set<std::string> seen;
  std::string duplicate;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(header_begin, header_begin + header_size,
                                   [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
                                     if (event == nlohmann::json::parse_event_t::key && depth == 1 &&
                                         !seen.insert(parsed.get<std::string>()).second && duplicate.empty())
                                       duplicate = parsed.get<std::string>();
                                     return true;
                                   });
  } catch (const nlohmann::json::exception& e) {
    fail_in(path_, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail_in(path_, "header is not a JSON object");
  if (!duplicate.empty()) fail_in(path_, "header names \"" + duplicate + "\" twice");

  for (const auto& [name, entry] : header.items()) {
    const std::string where = "tensor \"" + name + "\": ";
    if (name == "__metadata__") {
      if (!entry.is_object()) fail_in(path_, "__metadata__ must be an object of strings, got " + excerpt(entry));
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) fail_in(path_, "__metadata__[\"" + key + "\"] must be a string, got " + excerpt(value));
        metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    if (!entry.is_object())
      fail_in(path_, where + "expected an object {dtype, shape, data_offsets}, got " + excerpt(entry));
    for (const char* field : {"dtype", "shape", "data_offsets"})
      if (!entry.contains(field)) fail_in(path_, where + "missing \"" + field + "\"");

    TensorRecord r;
    r.name = name;
    const auto& dtype = entry["dtype"];
    if (!dtype.is_string()) fail_in(path_, where + "dtype must be a string, got " + excerpt(dtype));
    const auto type = scalar_type_from_safetensors(dtype.get<std::string>());
    if (!type)
      fail_in(path_, where + "unknown dtype \"" + dtype.get<std::string>() +
                         "\" (supported: " + supported_safetensors_dtypes() + ")");
    r.dtype = *type;

    const auto& shape = entry["shape"];
    if (!shape.is_array())
      fail_in(path_, where + "shape must be a list of non-negative integers, got " + excerpt(shape));
    std::uint64_t numel = 1;
    for (const auto& dim : shape) {
      if (!dim.is_number_unsigned() ||
          dim.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
        fail_in(path_, where + "shape must be a list of non-negative integers, got " + excerpt(shape));
      r.shape.push_back(dim.get<std::int64_t>());
      const auto product = checked_mul(numel, dim.get<std::uint64_t>());
      if (!product) fail_in(path_, where + "shape " + excerpt(shape) + " has more elements than fit in 64 bits");
      numel = *product;
    }

    const auto& offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
      fail_in(path_, where + "data_offsets must be two non-negative integers [begin, end], got " + excerpt(offsets));
    r.begin = offsets[0].get<std::uint64_t>();
    r.end = offsets[1].get<std::uint64_t>();
    const std::string range = "data_offsets [" + std::to_string(r.begin) + ", " + std::to_string(r.end) + "]";
    if (r.end < r.begin) fail_in(path_, where + range + " end before begin");
    if (r.end > buffer_size_)
      fail_in(path_, where + range + " run past the end of the " + std::to_string(buffer_size_) + "-byte data buffer");
    const auto needed = checked_mul(numel, c10::elementSize(r.dtype));
    if (!needed || *needed != r.byte_size())
      fail_in(path_, where + range + " hold " + std::to_string(r.byte_size()) + " bytes but shape " +
                         ft::shape_text(r.shape) + " of " + dtype.get<std::string>() + " needs " +
                         (needed ? std::to_string(*needed) : "more than 2^64"));
    records_.push_back(std::move(r));
  }

  // The buffer must be tiled exactly: sorted by offset, each tensor starts where the last ended.
  std::stable_sort(records_.begin(), records_.end(), [](const TensorRecord& a, const TensorRecord& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t cursor = 0;
  const TensorRecord* previous = nullptr;
  for (const TensorRecord& r : records_) {
    if (r.begin < cursor)
      fail_in(path_, "tensors \"" + previous->name + "\" (bytes " + std::to_string(previous->begin) + "-" +
                         std::to_string(previous->end) + ") and \"" + r.name + "\" (bytes " + std::to_string(r.begin) +
                         "-" + std::to_string(r.end) + ") overlap");
    if (r.begin > cursor)
      fail_in(path_, "bytes " + std::to_string(cursor) + "-" + std::to_string(r.begin) +
                         " of the data buffer (before tensor \"" + r.name + "\") belong to no tensor");
    cursor = r.end;
    previous = &r;
  }
  if (cursor != buffer_size_)
    fail_in(path_, "bytes " + std::to_string(cursor) + "-" + std::to_string(buffer_size_) +
                       " at the end of the data buffer belong to no tensor");
  for (std::size_t i = 0; i < records_.size(); ++i) index_[records_[i].name] = i;
}

const TensorRecord* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &records_[it->second];
}

at::Tensor SafetensorsFile::tensor(const std::string& name) const {
  const TensorRecord* r = find(name);
  if (!r) throw ft::Error(path_ + ": no tensor named \"" + name + "\"");
  return tensor(*r);
}

at::Tensor SafetensorsFile::tensor(const TensorRecord& r) const {
  const auto options = at::TensorOptions().dtype(r.dtype).device(at::kCPU);
  const unsigned char* data = buffer_ + r.begin;
  if (reinterpret_cast<std::uintptr_t>(data) % c10::elementSize(r.dtype) != 0) {
    at::Tensor copy = at::empty(r.shape, options);
    if (r.byte_size() > 0) std::memcpy(copy.data_ptr(), data, r.byte_size());
    return copy;
  }
  auto keepalive = mapping_;
  return at::from_blob(
      const_cast<unsigned char*>(data), r.shape, [keepalive](void*) {}, options);
}

// ---------------------------------------------------------------------------------------------
// Writer

void write_safetensors(const std::string& path, const std::vector<ft::NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    auto& meta = header["__metadata__"];
    meta = nlohmann::ordered_json::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
  }
  std::set<std::string> names;
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    const std::string where = path + ": tensor \"" + t.name + "\": ";
    if (t.name.empty() || t.name == "__metadata__") throw ft::Error(path + ": invalid tensor name \"" + t.name + "\"");
    if (!names.insert(t.name).second) throw ft::Error(where + "given twice");
    if (!t.tensor.defined()) throw ft::Error(where + "undefined tensor");
    if (t.tensor.layout() != at::kStrided) throw ft::Error(where + "only dense tensors can be stored");
    std::string code;
    try {
      code = safetensors_dtype_code(t.tensor.scalar_type());
    } catch (const ft::Error& e) {
      throw ft::Error(where + e.what());
    }
    const std::uint64_t bytes = tensor_bytes(t);
    auto& entry = header[t.name];
    entry["dtype"] = code;
    entry["shape"] = t.tensor.sizes().vec();
    entry["data_offsets"] = {offset, offset + bytes};
    offset += bytes;
  }
  std::string header_text = header.dump();
  header_text.append((8 - header_text.size() % 8) % 8, ' ');
  const std::uint64_t header_size = header_text.size();

  ft::write_file_atomically(path, [&](int fd) {
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(header_size >> (8 * i));
    ft::write_all(fd, length, sizeof length, path);
    ft::write_all(fd, header_text.data(), header_text.size(), path);
    for (const auto& t : tensors) {
      // One tensor at a time on the CPU, so a GPU model never needs a second full copy in RAM.
      const at::Tensor cpu = t.tensor.detach().to(at::kCPU).contiguous();
      const std::uint64_t bytes = static_cast<std::uint64_t>(cpu.numel()) * cpu.element_size();
      if (bytes > 0) ft::write_all(fd, cpu.data_ptr(), bytes, path);
    }
  });
}

ShardedWrite write_sharded_safetensors(const std::string& dir, const std::vector<ft::NamedTensor>& tensors,
                                       std::uint64_t max_shard_size,
                                       const std::map<std::string, std::string>& metadata) {
  if (max_shard_size == 0) throw ft::Error("max_shard_size must be positive");
  std::vector<std::vector<ft::NamedTensor>> shards(1);
  std::set<std::string> names;
  ShardedWrite out;
  std::uint64_t current = 0;
  for (const auto& t : tensors) {
    if (!names.insert(t.name).second) throw ft::Error(dir + ": tensor \"" + t.name + "\" given twice");
    const std::uint64_t bytes = tensor_bytes(t);
    if (!shards.back().empty() && current + bytes > max_shard_size) {
      shards.emplace_back();
      current = 0;
    }
    shards.back().push_back(t);
    current += bytes;
    out.total_size += bytes;
  }

  if (shards.size() == 1) {
    write_safetensors((fs::path(dir) / kSingleFileName).string(), shards[0], metadata);
    out.files.push_back(kSingleFileName);
    return out;
  }
  nlohmann::json weight_map = nlohmann::json::object();
  for (std::size_t i = 0; i < shards.size(); ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    write_safetensors((fs::path(dir) / name).string(), shards[i], metadata);
    out.files.push_back(name);
    for (const auto& t : shards[i]) weight_map[t.name] = name;
  }
  // Written last, so an index never names a shard that is not complete on disk.
  nlohmann::json index = {{"metadata", {{"total_size", out.total_size}}}, {"weight_map", weight_map}};
  ft::write_text_file_atomically((fs::path(dir) / kIndexFileName).string(), index.dump(2) + "\n");
  return out;
}

// ---------------------------------------------------------------------------------------------
// Checkpoint directories

std::vector<std::string> checkpoint_files_in(const std::string& dir, const std::vector<std::string>& listed) {
  return ft::resolve_checkpoint_files(dir, listed).files;
}

std::vector<SafetensorsFile> open_checkpoint(const std::string& dir, const std::vector<std::string>& listed) {
  const ft::CheckpointFileList resolved = ft::resolve_checkpoint_files(dir, listed);
  std::vector<SafetensorsFile> files;
  std::map<std::string, const SafetensorsFile*> by_path;
  for (const std::string& path : resolved.files) files.emplace_back(path);
  for (const SafetensorsFile& f : files) by_path[f.path()] = &f;
  for (const auto& [tensor, file] : resolved.weight_map)
    if (!by_path.at((fs::path(dir) / file).string())->find(tensor))
      throw ft::Error(resolved.index_path + ": maps tensor \"" + tensor + "\" to " + file + ", which does not hold it");
  return files;
}

}  // namespace ft_checkpointers
