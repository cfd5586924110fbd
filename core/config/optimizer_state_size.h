// Bytes of optimizer state per parameter tensor, for the optimizers fthost ships, read from the
// run's [optimizer] table with their own defaults: Adam / AdamW keep two moments in the
// parameter's dtype (three with amsgrad), SGD its momentum buffer, bitsandbytes' 8-bit forms a
// byte per moment plus a float32 absmax per block of 256 (float32 moments below min_8bit_size),
// its 32-bit forms float32 moments. What `fthost plan` counts per rank and the pre-flight check
// counts in one checkpoint.
#pragma once

#include <ft/config.h>

#include <cstdint>
#include <string>

namespace fthost {

struct OptimizerStateSize {
  std::string component;
  std::string summary;     // "2 moments in the parameters' dtype"
  bool known = true;       // false: a third party's optimizer, planned as Adam's two moments
  bool eight_bit = false;  // bitsandbytes' blockwise 8-bit moments
  double moments = 2;      // per element, in `moment_bytes` each (0 for SGD without momentum)
  int moment_bytes = 0;    // 0: the parameter's element size
  std::int64_t min_8bit_size = 4096;

  // This parameter's state: `numel` elements of `element_bytes` each.
  double bytes(std::int64_t numel, int element_bytes) const;
};

OptimizerStateSize optimizer_state_size(const ft::ConfigNode& optimizer);

}  // namespace fthost
