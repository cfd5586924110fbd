// bitsandbytes' Adam updates (../bitsandbytes_adam_update.h) for parameters on a CUDA device, and
// paged optimizer state: CUDA unified memory that the driver can evict to the host when the
// device runs short, as bitsandbytes' paged optimizers allocate it, prefetched to the device
// before each update. Each update rounds what the CPU kernel rounds, in the same order (no
// fused multiply-adds), so the two give the same bits. A build without CUDA has the same
// functions, which throw ft::Error saying so.
#pragma once

#include "../bitsandbytes_step_constants.h"

#include <ATen/core/Tensor.h>

namespace ftoptim {

// The tensors are contiguous and on the parameter's device (the caller checks); the maps are
// dynamic_map(true) and dynamic_map(false), 256 floats each, on the host.
void adam_8bit_blockwise_update_cuda(const at::Tensor& param, const at::Tensor& grad, const at::Tensor& state1,
                                     const at::Tensor& state2, const at::Tensor& absmax1, const at::Tensor& absmax2,
                                     const BitsAndBytesStepConstants& c, const float* signed_map,
                                     const float* unsigned_map);
void adam_32bit_update_cuda(const at::Tensor& param, const at::Tensor& grad, const at::Tensor& state1,
                            const at::Tensor& state2, const BitsAndBytesStepConstants& c);

// Zeros of `dtype` in CUDA unified memory, preferring `device` (a CUDA device), freed with the
// tensor.
at::Tensor paged_zeros(at::IntArrayRef sizes, at::ScalarType dtype, const at::Device& device);
// Whether `t` lives in unified memory (a paged state tensor).
bool is_paged(const at::Tensor& t);
// Moves a paged tensor's pages to its device on the current stream before a kernel reads them.
void prefetch_to_device(const at::Tensor& t);

}  // namespace ftoptim
