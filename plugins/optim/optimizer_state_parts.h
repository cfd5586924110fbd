// What every optimizer of ft_optim does the same way: clearing gradients, splitting a
// checkpoint's `state.<i>.<field>` tensors by parameter, reading its step count, and reading
// Adam's `betas`.
#pragma once

#include <ft/config.h>
#include <ft/model.h>

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ftoptim {

// One parameter's state tensors by field name, as found in a checkpoint.
using FieldTensors = std::map<std::string, at::Tensor>;

// zero_grad: each defined gradient dropped (set_to_none) or zeroed in place.
void zero_gradients(std::vector<at::Tensor>& params, bool set_to_none);

// `state` (names `state.<i>.<field>`) by parameter index. Throws ft::Error naming a tensor whose
// name is not of that form for one of `parameters` parameters, which `who` steps.
std::map<std::size_t, FieldTensors> state_by_parameter(const std::vector<ft::NamedTensor>& state,
                                                       std::size_t parameters, const std::string& who);

// The saved `step`: one int64 count. `prefix` ("state.<i>.") names it in errors.
std::int64_t restored_step(const FieldTensors& fields, const std::string& prefix);

// `betas`: [beta1, beta2], each in [0, 1); a config error naming the key otherwise.
std::pair<double, double> adam_betas(const ft::ConfigNode& cfg);

}  // namespace ftoptim
