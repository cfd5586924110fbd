// The CUDA kernels' entry points in a build without CUDA (FTHOST_WITH_CUDA=OFF): callers check
// available() first, and such a build has no CUDA tensors to pass.
#include <ft/errors.h>
#include <ft_cuda_kernels/swiglu.h>

namespace ft_cuda_kernels {

bool available() { return false; }

at::Tensor swiglu(const at::Tensor&, const at::Tensor&) {
  throw ft::Error("swiglu on CUDA: this build has no CUDA kernels (FTHOST_WITH_CUDA=OFF)");
}

}  // namespace ft_cuda_kernels
