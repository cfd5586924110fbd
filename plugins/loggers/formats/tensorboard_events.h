// Serialized tensorflow.Event messages, the records of a TensorBoard event file. Field numbers
// from tensorflow/core/util/event.proto, framework/summary.proto, tensor.proto, and
// tensorboard/plugins/hparams/plugin_data.proto.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace ft_loggers {

// The first record of every event file: file_version = "brain.Event:2".
std::string file_version_event(double wall_time);

// A scalar as PyTorch's add_scalar(new_style=True) writes it (and torchtune calls it): a rank-0
// DT_FLOAT tensor under the "scalars" plugin.
std::string scalar_event(double wall_time, std::int64_t step, const std::string& tag, float value);

// Markdown for TensorBoard's Text tab; `tag` gets PyTorch's "/text_summary" suffix.
std::string text_event(double wall_time, std::int64_t step, const std::string& tag, const std::string& markdown);

// One hyperparameter of the HParams tab: a number, a bool or a string (google.protobuf.Value).
struct HParam {
  std::string name;
  std::variant<double, bool, std::string> value;
};

// The session's hyperparameters (HParamsPluginData.session_start_info). TensorBoard infers the
// experiment from them and the run's scalar tags, so no experiment summary is needed.
std::string hparams_session_start_event(double wall_time, const std::vector<HParam>& hparams);

// HParamsPluginData.session_end_info: Status SUCCESS (1) or FAILURE (2).
std::string hparams_session_end_event(double wall_time, bool failed);

}  // namespace ft_loggers
