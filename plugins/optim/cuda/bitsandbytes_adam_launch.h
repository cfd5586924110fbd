// The CUDA kernels' launchers, free of LibTorch's headers (nvcc compiles only the kernels).
#pragma once

#include "../bitsandbytes_step_constants.h"

#include <cstdint>

namespace ftoptim::cuda_launch {

enum class ElementType { float32, bfloat16 };

struct DynamicMaps {
  float signed_codes[256];
  float unsigned_codes[256];
};

// `stream` is a cudaStream_t.
void adam_8bit_blockwise(void* param, ElementType param_type, const void* grad, ElementType grad_type,
                         std::uint8_t* state1, std::uint8_t* state2, float* absmax1, float* absmax2, std::int64_t n,
                         const BitsAndBytesStepConstants& c, const DynamicMaps& maps, void* stream);
void adam_32bit(void* param, ElementType param_type, const void* grad, ElementType grad_type, float* state1,
                float* state2, std::int64_t n, const BitsAndBytesStepConstants& c, void* stream);

}  // namespace ftoptim::cuda_launch
