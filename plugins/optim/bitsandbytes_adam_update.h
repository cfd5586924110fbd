// bitsandbytes' Adam / AdamW update (bitsandbytes.optim.Adam8bit, AdamW8bit, PagedAdamW8bit,
// PagedAdamW, ...), as its CPU backend computes it, over one tensor:
//   - 8-bit blockwise: both moments stored as dynamic-map codes (dynamic_quantization.h) with one
//     absmax per 256 values; each block is decoded, updated and encoded again in one pass;
//   - 32-bit: float32 moments, for tensors below min_8bit_size and the 32-bit optimizers.
// Its weight decay is decoupled (p *= 1 - lr * wd) for Adam and AdamW alike, as bitsandbytes'
// kernels apply it. The parameter is updated in float32 and rounded once to its dtype.
#pragma once

#include "update_hyperparameters.h"

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace ftoptim {

// `step` is the step count after this update (1 on the first). The gradient is read as
// `grad * gradient_scale` rounded to float32, as an in-place multiply of a float32 gradient
// would round it. state1/state2: uint8 codes of the parameter's shape; absmax1/absmax2: float32,
// one per block of 256 values (the last block may be short).
void adam_8bit_blockwise_update(const at::Tensor& param, const at::Tensor& grad, const at::Tensor& state1,
                                const at::Tensor& state2, const at::Tensor& absmax1, const at::Tensor& absmax2,
                                std::int64_t step, const AdamHyperparameters& h, double gradient_scale = 1.0);

// The same update with float32 moments (bitsandbytes' optimizer_update_32bit for "adam").
void adam_32bit_update(const at::Tensor& param, const at::Tensor& grad, const at::Tensor& state1,
                       const at::Tensor& state2, std::int64_t step, const AdamHyperparameters& h,
                       double gradient_scale = 1.0);

}  // namespace ftoptim
