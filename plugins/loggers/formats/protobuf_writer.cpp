#include "protobuf_writer.h"

#include <cstring>

namespace ft_loggers {

namespace {

constexpr int kVarint = 0;
constexpr int kFixed64 = 1;
constexpr int kLengthDelimited = 2;
constexpr int kFixed32 = 5;

template <class Bits>
void append_little_endian(std::string& out, Bits bits) {
  for (std::size_t i = 0; i < sizeof(Bits); ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
}

}  // namespace

void append_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void ProtoWriter::tag(int field, int wire_type) {
  append_varint(out_, (static_cast<std::uint64_t>(field) << 3) | static_cast<std::uint64_t>(wire_type));
}

ProtoWriter& ProtoWriter::varint(int field, std::uint64_t value) {
  tag(field, kVarint);
  append_varint(out_, value);
  return *this;
}

ProtoWriter& ProtoWriter::double_value(int field, double value) {
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  tag(field, kFixed64);
  append_little_endian(out_, bits);
  return *this;
}

ProtoWriter& ProtoWriter::float_value(int field, float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  tag(field, kFixed32);
  append_little_endian(out_, bits);
  return *this;
}

ProtoWriter& ProtoWriter::packed_float(int field, float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  tag(field, kLengthDelimited);
  append_varint(out_, sizeof bits);
  append_little_endian(out_, bits);
  return *this;
}

ProtoWriter& ProtoWriter::bytes(int field, std::string_view data) {
  tag(field, kLengthDelimited);
  append_varint(out_, data.size());
  out_.append(data.data(), data.size());
  return *this;
}

}  // namespace ft_loggers
