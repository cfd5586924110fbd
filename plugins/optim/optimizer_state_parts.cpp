#include "optimizer_state_parts.h"

#include <ft/errors.h>

#include <exception>

namespace ftoptim {

void zero_gradients(std::vector<at::Tensor>& params, bool set_to_none) {
  for (auto& p : params) {
    if (!p.mutable_grad().defined()) continue;
    if (set_to_none) {
      p.mutable_grad() = at::Tensor();
    } else {
      p.mutable_grad().detach_();
      p.mutable_grad().zero_();
    }
  }
}

std::map<std::size_t, FieldTensors> state_by_parameter(const std::vector<ft::NamedTensor>& state,
                                                       std::size_t parameters, const std::string& who) {
  std::map<std::size_t, FieldTensors> by_param;
  for (const ft::NamedTensor& t : state) {
    // state.<i>.<field>
    const auto dot = t.name.find('.', 6);
    std::size_t index = parameters;
    if (t.name.rfind("state.", 0) == 0 && dot != std::string::npos) {
      try {
        index = std::stoul(t.name.substr(6, dot - 6));
      } catch (const std::exception&) {
      }
    }
    if (index >= parameters)
      throw ft::Error("optimizer state \"" + t.name + "\": not state.<i>.<field> for one of the " +
                      std::to_string(parameters) + " parameters " + who + " steps");
    by_param[index][t.name.substr(dot + 1)] = t.tensor;
  }
  return by_param;
}

std::int64_t restored_step(const FieldTensors& fields, const std::string& prefix) {
  auto it = fields.find("step");
  if (it == fields.end()) throw ft::Error("optimizer state \"" + prefix + "step\" is missing");
  if (it->second.numel() != 1 || it->second.scalar_type() != at::kLong)
    throw ft::Error("optimizer state \"" + prefix + "step\": expected one int64 step count");
  return it->second.item<std::int64_t>();
}

std::pair<double, double> adam_betas(const ft::ConfigNode& cfg) {
  auto b = cfg.get<std::vector<double>>("betas");
  if (b.size() != 2) cfg.fail("betas", "expected two numbers [beta1, beta2], got " + std::to_string(b.size()));
  for (std::size_t i = 0; i < 2; ++i)
    if (!(b[i] >= 0 && b[i] < 1))
      cfg.fail("betas", "beta" + std::to_string(i + 1) + " must be in [0, 1), got " + std::to_string(b[i]));
  return {b[0], b[1]};
}

}  // namespace ftoptim
