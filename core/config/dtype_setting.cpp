#include "config/dtype_setting.h"

#include <string>

namespace fthost {

c10::ScalarType read_dtype(const ft::ConfigNode& root) {
  const std::string name = root.get<std::string>("dtype");
  if (name == "fp32") return c10::ScalarType::Float;
  if (name == "bf16") return c10::ScalarType::BFloat16;
  root.fail("dtype", "expected \"fp32\" or \"bf16\", got \"" + name + "\"");
}

}  // namespace fthost
