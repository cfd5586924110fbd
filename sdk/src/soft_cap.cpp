#include <ft/model.h>

#include <ATen/ATen.h>

namespace ft {

at::Tensor soft_cap(const at::Tensor& x, double cap) { return cap > 0 ? at::tanh(x / cap) * cap : x; }

}  // namespace ft
