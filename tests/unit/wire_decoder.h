// Independent readers for the logger file formats, written from the format descriptions rather
// than from the plugins' encoders: protobuf wire format, CRC-32C and CRC-32/IEEE done bitwise,
// TFRecord framing and wandb's LevelDB-style log. Every check failure throws, so a test can
// assert that a corrupted byte is detected.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fttest {

struct DecodeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Bit-at-a-time CRCs over the reflected polynomials.
inline std::uint32_t bitwise_crc(std::string_view data, std::uint32_t poly, std::uint32_t crc = 0) {
  crc = ~crc;
  for (unsigned char byte : data) {
    crc ^= byte;
    for (int i = 0; i < 8; ++i) crc = (crc >> 1) ^ ((crc & 1) ? poly : 0);
  }
  return ~crc;
}
inline std::uint32_t reference_crc32c(std::string_view data) { return bitwise_crc(data, 0x82F63B78u); }
inline std::uint32_t reference_crc32_ieee(std::string_view data) { return bitwise_crc(data, 0xEDB88320u); }

inline std::uint64_t read_le(std::string_view bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  return v;
}

// One decoded protobuf message: every field occurrence by number, in order.
class Message {
 public:
  struct Field {
    int wire_type;
    std::uint64_t number;  // varint, fixed32 and fixed64 payloads
    std::string bytes;     // length-delimited payloads
  };

  explicit Message(std::string_view data) {
    std::size_t i = 0;
    while (i < data.size()) {
      const std::uint64_t key = varint(data, i);
      const int field = static_cast<int>(key >> 3);
      const int wire = static_cast<int>(key & 7);
      if (field == 0) throw DecodeError("field number 0");
      Field f{wire, 0, {}};
      switch (wire) {
        case 0: f.number = varint(data, i); break;
        case 1: f.number = read_le(take(data, i, 8)); break;
        case 5: f.number = read_le(take(data, i, 4)); break;
        case 2: {
          const std::uint64_t n = varint(data, i);
          f.bytes = std::string(take(data, i, n));
          break;
        }
        default: throw DecodeError("unsupported wire type " + std::to_string(wire));
      }
      fields_[field].push_back(std::move(f));
    }
  }

  bool has(int field) const { return fields_.count(field) > 0; }
  std::size_t count(int field) const { return has(field) ? fields_.at(field).size() : 0; }
  const Field& last(int field, int wire) const {
    auto it = fields_.find(field);
    if (it == fields_.end()) throw DecodeError("missing field " + std::to_string(field));
    const Field& f = it->second.back();  // proto3: the last occurrence wins
    if (f.wire_type != wire)
      throw DecodeError("field " + std::to_string(field) + ": wire type " + std::to_string(f.wire_type));
    return f;
  }
  std::uint64_t varint_field(int field) const { return last(field, 0).number; }
  std::int64_t int_field(int field, std::int64_t fallback = 0) const {
    return has(field) ? static_cast<std::int64_t>(varint_field(field)) : fallback;
  }
  double double_field(int field) const {
    const std::uint64_t bits = last(field, 1).number;
    double v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  std::string string_field(int field, std::string fallback = "") const {
    return has(field) ? last(field, 2).bytes : fallback;
  }
  Message message_field(int field) const { return Message(last(field, 2).bytes); }
  std::vector<Message> messages(int field) const {
    std::vector<Message> out;
    if (!has(field)) return out;
    for (const auto& f : fields_.at(field)) {
      if (f.wire_type != 2) throw DecodeError("field " + std::to_string(field) + " is not a message");
      out.emplace_back(f.bytes);
    }
    return out;
  }
  // A repeated float in packed (one length-delimited run) or unpacked form.
  std::vector<float> floats(int field) const {
    std::vector<float> out;
    if (!has(field)) return out;
    for (const auto& f : fields_.at(field)) {
      auto push = [&](std::uint32_t bits) {
        float v;
        std::memcpy(&v, &bits, sizeof v);
        out.push_back(v);
      };
      if (f.wire_type == 5)
        push(static_cast<std::uint32_t>(f.number));
      else if (f.wire_type == 2 && f.bytes.size() % 4 == 0)
        for (std::size_t k = 0; k < f.bytes.size(); k += 4)
          push(static_cast<std::uint32_t>(read_le(std::string_view(f.bytes).substr(k, 4))));
      else
        throw DecodeError("field " + std::to_string(field) + " is not a float");
    }
    return out;
  }

 private:
  static std::uint64_t varint(std::string_view data, std::size_t& i) {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (i >= data.size()) throw DecodeError("truncated varint");
      const auto byte = static_cast<unsigned char>(data[i++]);
      v |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
      if (!(byte & 0x80)) return v;
    }
    throw DecodeError("varint longer than 10 bytes");
  }
  static std::string_view take(std::string_view data, std::size_t& i, std::uint64_t n) {
    if (n > data.size() - i) throw DecodeError("field runs past the end of its message");
    auto out = data.substr(i, n);
    i += n;
    return out;
  }
  std::map<int, std::vector<Field>> fields_;
};

// TFRecord: u64 length, masked CRC-32C of the length, data, masked CRC-32C of the data.
inline std::uint32_t reference_masked_crc32c(std::string_view data) {
  const std::uint32_t c = reference_crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

inline std::vector<std::string> read_tfrecords(const std::string& file) {
  std::vector<std::string> records;
  std::string_view rest(file);
  while (!rest.empty()) {
    if (rest.size() < 12) throw DecodeError("truncated record header");
    const std::uint64_t n = read_le(rest.substr(0, 8));
    if (read_le(rest.substr(8, 4)) != reference_masked_crc32c(rest.substr(0, 8)))
      throw DecodeError("length CRC mismatch");
    if (rest.size() < 16 + n) throw DecodeError("truncated record");
    const std::string_view data = rest.substr(12, n);
    if (read_le(rest.substr(12 + n, 4)) != reference_masked_crc32c(data)) throw DecodeError("data CRC mismatch");
    records.emplace_back(data);
    rest.remove_prefix(16 + n);
  }
  return records;
}

// wandb's `.wandb`: ":W&B" 0xBEE1 0, then 32 KiB blocks of chunks (CRC-32 over type + data,
// u16 length, type); tails shorter than a chunk header are zeros.
inline std::vector<std::string> read_wandb_log(const std::string& file) {
  constexpr std::size_t kBlock = 32768, kHeader = 7;
  if (file.size() < 7 || file.compare(0, 4, ":W&B") != 0 || read_le(std::string_view(file).substr(4, 2)) != 0xBEE1 ||
      file[6] != 0)
    throw DecodeError("bad W&B header");
  std::vector<std::string> records;
  std::string assembling;
  bool in_record = false;
  std::size_t i = 7;
  while (i < file.size()) {
    const std::size_t left_in_block = kBlock - i % kBlock;
    if (left_in_block < kHeader) {
      for (std::size_t k = 0; k < left_in_block && i + k < file.size(); ++k)
        if (file[i + k] != 0) throw DecodeError("non-zero block tail");
      i += left_in_block;
      continue;
    }
    if (file.size() - i < kHeader) throw DecodeError("truncated chunk header");
    const std::string_view header(file.data() + i, kHeader);
    const auto crc = static_cast<std::uint32_t>(read_le(header.substr(0, 4)));
    const std::size_t n = read_le(header.substr(4, 2));
    const auto type = static_cast<unsigned char>(header[6]);
    if (kHeader + n > left_in_block) throw DecodeError("chunk crosses a block boundary");
    if (i + kHeader + n > file.size()) throw DecodeError("truncated chunk");
    const std::string typed = std::string(1, static_cast<char>(type)) + file.substr(i + kHeader, n);
    if (crc != reference_crc32_ieee(typed)) throw DecodeError("chunk CRC mismatch");
    const std::string data = typed.substr(1);
    i += kHeader + n;
    switch (type) {
      case 1:
        if (in_record) throw DecodeError("FULL inside a record");
        records.push_back(data);
        break;
      case 2:
        if (in_record) throw DecodeError("FIRST inside a record");
        assembling = data;
        in_record = true;
        break;
      case 3:
        if (!in_record) throw DecodeError("MIDDLE outside a record");
        assembling += data;
        break;
      case 4:
        if (!in_record) throw DecodeError("LAST outside a record");
        records.push_back(assembling + data);
        in_record = false;
        break;
      default: throw DecodeError("unknown chunk type " + std::to_string(type));
    }
  }
  if (in_record) throw DecodeError("log ends inside a record");
  return records;
}

}  // namespace fttest
