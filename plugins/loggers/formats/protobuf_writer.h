// Protocol Buffers wire format, encoding only: the few field kinds the TensorBoard and W&B
// records need. Fields are written in call order; proto3 readers accept any order, and the
// caller leaves out fields at their default value as protobuf serializers do.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ft_loggers {

void append_varint(std::string& out, std::uint64_t value);

class ProtoWriter {
 public:
  // int32, int64, uint64, bool and enum fields; negative values take ten bytes, as in protobuf.
  ProtoWriter& varint(int field, std::uint64_t value);
  ProtoWriter& int64(int field, std::int64_t value) { return varint(field, static_cast<std::uint64_t>(value)); }
  ProtoWriter& boolean(int field, bool value) { return varint(field, value ? 1 : 0); }
  ProtoWriter& double_value(int field, double value);
  ProtoWriter& float_value(int field, float value);
  // A repeated float field in proto3's packed form.
  ProtoWriter& packed_float(int field, float value);
  // string, bytes and embedded-message fields.
  ProtoWriter& bytes(int field, std::string_view data);
  ProtoWriter& message(int field, const ProtoWriter& nested) { return bytes(field, nested.data()); }

  const std::string& data() const { return out_; }

 private:
  void tag(int field, int wire_type);
  std::string out_;
};

}  // namespace ft_loggers
