#include "bitsandbytes_adam_cuda.h"

#include "bitsandbytes_adam_launch.h"

#include <ft/errors.h>

#include <ATen/ops/from_blob.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include <cstring>
#include <string>

namespace ftoptim {

namespace {

cuda_launch::ElementType element_type(const at::Tensor& t, const char* what) {
  if (t.scalar_type() == at::kFloat) return cuda_launch::ElementType::float32;
  if (t.scalar_type() == at::kBFloat16) return cuda_launch::ElementType::bfloat16;
  throw ft::Error(std::string("bitsandbytes Adam update on CUDA: ") + what + " of dtype " +
                  c10::toString(t.scalar_type()) + " (float32 and bfloat16 are supported)");
}

void check(cudaError_t status, const std::string& what) {
  if (status != cudaSuccess) throw ft::Error(what + ": " + cudaGetErrorString(status));
}

cudaMemLocation on_device(int index) {
  cudaMemLocation location{};
  location.type = cudaMemLocationTypeDevice;
  location.id = index;
  return location;
}

// Before a kernel of the current stream reads paged state, its pages move to the device.
void prefetch_if_paged(const at::Tensor& t) {
  if (is_paged(t)) prefetch_to_device(t);
}

}  // namespace

void adam_8bit_blockwise_update_cuda(const at::Tensor& param, const at::Tensor& grad, const at::Tensor& state1,
                                     const at::Tensor& state2, const at::Tensor& absmax1, const at::Tensor& absmax2,
                                     const BitsAndBytesStepConstants& c, const float* signed_map,
                                     const float* unsigned_map) {
  const c10::cuda::CUDAGuard device(param.device());
  for (const at::Tensor* t : {&state1, &state2, &absmax1, &absmax2}) prefetch_if_paged(*t);
  cuda_launch::DynamicMaps maps{};
  std::memcpy(maps.signed_codes, signed_map, sizeof maps.signed_codes);
  std::memcpy(maps.unsigned_codes, unsigned_map, sizeof maps.unsigned_codes);
  cuda_launch::adam_8bit_blockwise(param.mutable_data_ptr(), element_type(param, "parameters"), grad.const_data_ptr(),
                                   element_type(grad, "gradients"), state1.mutable_data_ptr<std::uint8_t>(),
                                   state2.mutable_data_ptr<std::uint8_t>(), absmax1.mutable_data_ptr<float>(),
                                   absmax2.mutable_data_ptr<float>(), param.numel(), c, maps,
                                   c10::cuda::getCurrentCUDAStream().stream());
  check(cudaGetLastError(), "bitsandbytes 8-bit Adam kernel");
}

void adam_32bit_update_cuda(const at::Tensor& param, const at::Tensor& grad, const at::Tensor& state1,
                            const at::Tensor& state2, const BitsAndBytesStepConstants& c) {
  const c10::cuda::CUDAGuard device(param.device());
  for (const at::Tensor* t : {&state1, &state2}) prefetch_if_paged(*t);
  cuda_launch::adam_32bit(param.mutable_data_ptr(), element_type(param, "parameters"), grad.const_data_ptr(),
                          element_type(grad, "gradients"), state1.mutable_data_ptr<float>(),
                          state2.mutable_data_ptr<float>(), param.numel(), c,
                          c10::cuda::getCurrentCUDAStream().stream());
  check(cudaGetLastError(), "bitsandbytes 32-bit Adam kernel");
}

at::Tensor paged_zeros(at::IntArrayRef sizes, at::ScalarType dtype, const at::Device& device) {
  std::int64_t count = 1;
  for (const auto size : sizes) count *= size;
  const std::size_t bytes = static_cast<std::size_t>(count) * c10::elementSize(dtype);
  const c10::cuda::CUDAGuard guard(device);
  void* data = nullptr;
  // One byte at least: a managed allocation of zero bytes is an error.
  check(cudaMallocManaged(&data, bytes > 0 ? bytes : 1, cudaMemAttachGlobal),
        "paged optimizer state: cudaMallocManaged of " + std::to_string(bytes) + " bytes");
  // Prefer the device: pages live there and move to the host only under memory pressure.
  if (bytes > 0) {
    check(cudaMemAdvise(data, bytes, cudaMemAdviseSetPreferredLocation, on_device(device.index())),
          "paged optimizer state: cudaMemAdvise");
    check(cudaMemset(data, 0, bytes), "paged optimizer state: cudaMemset");
  }
  return at::from_blob(
      data, sizes, [](void* ptr) { cudaFree(ptr); }, at::TensorOptions().dtype(dtype).device(device));
}

bool is_paged(const at::Tensor& t) {
  if (!t.is_cuda()) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, t.const_data_ptr()) != cudaSuccess) {
    cudaGetLastError();  // clears the error the query left
    return false;
  }
  return attributes.type == cudaMemoryTypeManaged;
}

void prefetch_to_device(const at::Tensor& t) {
  const std::size_t bytes = static_cast<std::size_t>(t.numel()) * t.element_size();
  if (bytes == 0) return;
  check(cudaMemPrefetchAsync(t.const_data_ptr(), bytes, on_device(t.device().index()), 0,
                             c10::cuda::getCurrentCUDAStream(t.device().index()).stream()),
        "paged optimizer state: cudaMemPrefetchAsync");
}

}  // namespace ftoptim
