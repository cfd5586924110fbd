// The safetensors format (https://github.com/huggingface/safetensors), read and written here:
//
//   u64 little-endian N | N bytes of JSON header | byte buffer
//
// The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
// relative to the buffer start) and may hold "__metadata__": {string: string}. The tensors must
// cover the buffer exactly: no overlaps, no gaps, nothing after the last one.
//
// Reading memory-maps the file read-only and returns zero-copy tensors over the mapping; each
// tensor holds the mapping alive through its deleter, so a tensor may outlive its
// SafetensorsFile. The tensors are therefore read-only: writing into one faults. (A tensor whose
// bytes are not aligned to its element size is copied instead, so kernels never see a misaligned
// pointer.)
#pragma once

#include <ft/checkpoint_files.h>
#include <ft/model.h>

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ft_checkpointers {

inline constexpr const char* kSingleFileName = ft::kSingleCheckpointFileName;
inline constexpr const char* kIndexFileName = ft::kCheckpointIndexFileName;
inline constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit

// "F32" -> Float, ...; nullopt for a code this reader does not support.
std::optional<c10::ScalarType> scalar_type_from_safetensors(std::string_view code);
// Float -> "F32", ...; throws ft::Error for a dtype safetensors cannot hold here.
std::string safetensors_dtype_code(c10::ScalarType type);
// The codes this implementation supports, for error messages: "F64, F32, ...".
std::string supported_safetensors_dtypes();

struct TensorRecord {
  std::string name;
  c10::ScalarType dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  // offsets into the byte buffer
  std::uint64_t end = 0;
  std::uint64_t byte_size() const { return end - begin; }
};

class SafetensorsFile {
 public:
  // Maps and validates the whole header; throws ft::Error naming the file (and tensor) on any
  // violation of the format.
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return path_; }
  // Every tensor, in buffer order.
  const std::vector<TensorRecord>& records() const { return records_; }
  const TensorRecord* find(const std::string& name) const;
  // A view of the tensor's bytes (see the file comment); throws for an unknown name.
  at::Tensor tensor(const std::string& name) const;
  at::Tensor tensor(const TensorRecord& record) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  struct Mapping;
  std::string path_;
  std::shared_ptr<const Mapping> mapping_;
  const unsigned char* buffer_ = nullptr;  // the byte buffer inside the mapping
  std::uint64_t buffer_size_ = 0;
  std::vector<TensorRecord> records_;
  std::map<std::string, std::size_t> index_;  // name -> position in records_
  std::map<std::string, std::string> metadata_;
};

// Writes `tensors` (any device, any layout; saved as contiguous CPU data in the order given) to
// `path` atomically: `<path>.tmp-<pid>`, fsync, rename. The header is padded with spaces to a
// multiple of 8 bytes so the buffer is 8-byte aligned.
void write_safetensors(const std::string& path, const std::vector<ft::NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

struct ShardedWrite {
  std::vector<std::string> files;  // file names inside the directory, in order
  std::uint64_t total_size = 0;    // tensor bytes, as the index's metadata.total_size
};

// Writes `tensors` into `dir` as Hugging Face does: everything in `model.safetensors` when it
// fits in `max_shard_size` bytes, else `model-0000i-of-0000K.safetensors` plus
// `model.safetensors.index.json` {"metadata": {"total_size"}, "weight_map": {name: file}}.
// Shards are filled in the given order and a new one starts when the next tensor would exceed
// the limit; a tensor larger than the limit gets a shard of its own.
ShardedWrite write_sharded_safetensors(const std::string& dir, const std::vector<ft::NamedTensor>& tensors,
                                       std::uint64_t max_shard_size,
                                       const std::map<std::string, std::string>& metadata = {});

// The safetensors files of a checkpoint directory: `listed` (relative to `dir`) when not empty,
// else the shards named by `model.safetensors.index.json`, else `model.safetensors`. Each file
// must exist; errors name the path and list the directory's .safetensors files.
std::vector<std::string> checkpoint_files_in(const std::string& dir, const std::vector<std::string>& listed);

// Opens the files of checkpoint_files_in(). When they come from an index, checks that every
// tensor the index maps to a file is in that file.
std::vector<SafetensorsFile> open_checkpoint(const std::string& dir, const std::vector<std::string>& listed);

}  // namespace ft_checkpointers
