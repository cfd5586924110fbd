// bitsandbytes_adam_cuda.h in a build without CUDA: nothing can be on a CUDA device, so only a
// caller that did not check reaches these.
#include "bitsandbytes_adam_cuda.h"

#include <ft/errors.h>

namespace ftoptim {

namespace {
[[noreturn]] void unavailable() {
  throw ft::Error("bitsandbytes' optimizers on CUDA: this fthost was built without CUDA (FTHOST_WITH_CUDA=OFF)");
}
}  // namespace

void adam_8bit_blockwise_update_cuda(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                     const at::Tensor&, const at::Tensor&, const BitsAndBytesStepConstants&,
                                     const float*, const float*) {
  unavailable();
}
void adam_32bit_update_cuda(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                            const BitsAndBytesStepConstants&) {
  unavailable();
}
at::Tensor paged_zeros(at::IntArrayRef, at::ScalarType, const at::Device&) { unavailable(); }
bool is_paged(const at::Tensor&) { return false; }
void prefetch_to_device(const at::Tensor&) {}

}  // namespace ftoptim
