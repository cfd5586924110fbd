#include "config/optimizer_state_size.h"

namespace fthost {

double OptimizerStateSize::bytes(std::int64_t numel, int element_bytes) const {
  const auto n = static_cast<double>(numel);
  if (eight_bit && numel >= min_8bit_size) {
    const auto blocks = static_cast<double>((numel + 255) / 256);
    return moments * (n + 4.0 * blocks);
  }
  if (eight_bit) return moments * 4.0 * n;
  return moments * n * (moment_bytes > 0 ? moment_bytes : element_bytes);
}

OptimizerStateSize optimizer_state_size(const ft::ConfigNode& optimizer) {
  OptimizerStateSize size;
  size.component = optimizer.component();
  const std::string& c = size.component;
  if (c == "torch.optim.AdamW" || c == "torch.optim.Adam") {
    const bool amsgrad = optimizer.get<bool>("amsgrad", false);
    size.moments = amsgrad ? 3 : 2;
    size.summary = amsgrad ? "3 tensors per parameter (moments and max_exp_avg_sq) in its dtype"
                           : "2 moments per parameter in its dtype";
  } else if (c == "torch.optim.SGD") {
    const bool momentum = optimizer.get<double>("momentum", 0.0) != 0.0;
    size.moments = momentum ? 1 : 0;
    size.summary = momentum ? "a momentum buffer per parameter in its dtype" : "none (no momentum)";
  } else if (c == "bitsandbytes.optim.AdamW8bit" || c == "bitsandbytes.optim.Adam8bit" ||
             c == "bitsandbytes.optim.PagedAdamW8bit" ||
             (c == "bitsandbytes.optim.PagedAdamW" && optimizer.get<std::int64_t>("optim_bits", 32) == 8)) {
    size.eight_bit = true;
    size.min_8bit_size = optimizer.get<std::int64_t>("min_8bit_size", 4096);
    size.summary = "2 moments of 1 byte per element plus a float32 absmax per 256 (float32 below min_8bit_size " +
                   std::to_string(size.min_8bit_size) + ")";
  } else if (c == "bitsandbytes.optim.PagedAdamW" || c == "bitsandbytes.optim.PagedAdamW32bit") {
    size.moment_bytes = 4;
    size.summary = "2 float32 moments per parameter";
  } else {
    size.known = false;
    size.summary = "unknown to the plan: counted as 2 moments per parameter in its dtype, as Adam's";
  }
  return size;
}

}  // namespace fthost
