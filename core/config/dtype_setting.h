// The top-level `dtype` key that the training recipe and `fthost generate` both read.
#pragma once

#include <ft/config.h>

#include <c10/core/ScalarType.h>

namespace fthost {

// "fp32" or "bf16" as a scalar type; anything else fails naming the `dtype` key.
c10::ScalarType read_dtype(const ft::ConfigNode& root);

}  // namespace fthost
