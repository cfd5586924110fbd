#include "tensorboard_events.h"

#include "protobuf_writer.h"

namespace ft_loggers {

namespace {

// tensorflow.Event
constexpr int kEventWallTime = 1;
constexpr int kEventStep = 2;
constexpr int kEventFileVersion = 3;
constexpr int kEventSummary = 5;
// tensorflow.Summary and Summary.Value
constexpr int kSummaryValue = 1;
constexpr int kValueTag = 1;
constexpr int kValueTensor = 8;
constexpr int kValueMetadata = 9;
// tensorflow.SummaryMetadata and its PluginData
constexpr int kMetadataPluginData = 1;
constexpr int kMetadataDataClass = 4;
constexpr int kPluginName = 1;
constexpr int kPluginContent = 2;
constexpr int kDataClassScalar = 1;
constexpr int kDataClassTensor = 2;
// tensorflow.TensorProto, TensorShapeProto
constexpr int kTensorDtype = 1;
constexpr int kTensorShape = 2;
constexpr int kTensorFloatVal = 5;
constexpr int kTensorStringVal = 8;
constexpr int kShapeDim = 2;
constexpr int kDimSize = 1;
constexpr int kDtFloat = 1;
constexpr int kDtString = 7;
// tensorboard.hparams.HParamsPluginData, SessionStartInfo, SessionEndInfo
constexpr int kHParamsSessionStartInfo = 3;
constexpr int kHParamsSessionEndInfo = 4;
constexpr int kStartInfoHParams = 1;
constexpr int kStartInfoStartTime = 5;
constexpr int kEndInfoStatus = 1;
constexpr int kEndInfoEndTime = 2;
constexpr int kStatusSuccess = 1;
constexpr int kStatusFailure = 2;
// map<string, google.protobuf.Value> entries and google.protobuf.Value
constexpr int kMapKey = 1;
constexpr int kMapValue = 2;
constexpr int kValueNumber = 2;
constexpr int kValueString = 3;
constexpr int kValueBool = 4;

ProtoWriter plugin_metadata(const std::string& plugin, const std::string& content, int data_class) {
  ProtoWriter plugin_data;
  plugin_data.bytes(kPluginName, plugin);
  if (!content.empty()) plugin_data.bytes(kPluginContent, content);
  ProtoWriter metadata;
  metadata.message(kMetadataPluginData, plugin_data);
  metadata.varint(kMetadataDataClass, data_class);
  return metadata;
}

ProtoWriter rank0_float_tensor(float value) {
  ProtoWriter tensor;
  tensor.varint(kTensorDtype, kDtFloat);
  tensor.packed_float(kTensorFloatVal, value);
  return tensor;
}

std::string summary_event(double wall_time, std::int64_t step, const ProtoWriter& value) {
  ProtoWriter summary;
  summary.message(kSummaryValue, value);
  ProtoWriter event;
  event.double_value(kEventWallTime, wall_time);
  if (step != 0) event.int64(kEventStep, step);
  event.message(kEventSummary, summary);
  return event.data();
}

// The HParams plugin keeps its data in the metadata; the value carries a placeholder tensor.
std::string hparams_event(double wall_time, const std::string& tag, int field, const ProtoWriter& info) {
  ProtoWriter plugin_data;
  plugin_data.message(field, info);
  ProtoWriter value;
  value.bytes(kValueTag, tag);
  value.message(kValueMetadata, plugin_metadata("hparams", plugin_data.data(), kDataClassTensor));
  value.message(kValueTensor, rank0_float_tensor(0.0f));
  return summary_event(wall_time, 0, value);
}

}  // namespace

std::string file_version_event(double wall_time) {
  ProtoWriter event;
  event.double_value(kEventWallTime, wall_time);
  event.bytes(kEventFileVersion, "brain.Event:2");
  return event.data();
}

std::string scalar_event(double wall_time, std::int64_t step, const std::string& tag, float value) {
  ProtoWriter v;
  v.bytes(kValueTag, tag);
  v.message(kValueMetadata, plugin_metadata("scalars", "", kDataClassScalar));
  v.message(kValueTensor, rank0_float_tensor(value));
  return summary_event(wall_time, step, v);
}

std::string text_event(double wall_time, std::int64_t step, const std::string& tag, const std::string& markdown) {
  ProtoWriter dim;
  dim.int64(kDimSize, 1);
  ProtoWriter shape;
  shape.message(kShapeDim, dim);
  ProtoWriter tensor;
  tensor.varint(kTensorDtype, kDtString);
  tensor.message(kTensorShape, shape);
  tensor.bytes(kTensorStringVal, markdown);
  ProtoWriter v;
  v.bytes(kValueTag, tag + "/text_summary");
  v.message(kValueMetadata, plugin_metadata("text", "", kDataClassTensor));
  v.message(kValueTensor, tensor);
  return summary_event(wall_time, step, v);
}

std::string hparams_session_start_event(double wall_time, const std::vector<HParam>& hparams) {
  ProtoWriter info;
  for (const auto& hp : hparams) {
    ProtoWriter value;
    if (const auto* number = std::get_if<double>(&hp.value))
      value.double_value(kValueNumber, *number);
    else if (const auto* flag = std::get_if<bool>(&hp.value))
      value.boolean(kValueBool, *flag);
    else
      value.bytes(kValueString, std::get<std::string>(hp.value));
    ProtoWriter entry;
    entry.bytes(kMapKey, hp.name);
    entry.message(kMapValue, value);
    info.message(kStartInfoHParams, entry);
  }
  info.double_value(kStartInfoStartTime, wall_time);
  return hparams_event(wall_time, "_hparams_/session_start_info", kHParamsSessionStartInfo, info);
}

std::string hparams_session_end_event(double wall_time, bool failed) {
  ProtoWriter info;
  info.varint(kEndInfoStatus, failed ? kStatusFailure : kStatusSuccess);
  info.double_value(kEndInfoEndTime, wall_time);
  return hparams_event(wall_time, "_hparams_/session_end_info", kHParamsSessionEndInfo, info);
}

}  // namespace ft_loggers
