#include <ft/nn/parameter_device.h>

#include <unordered_set>

namespace ft::nn {

namespace {
thread_local bool meta_parameters = false;
}  // namespace

c10::TensorOptions parameter_options() {
  return c10::TensorOptions().dtype(at::kFloat).device(meta_parameters ? c10::kMeta : c10::kCPU);
}

MetaParameters::MetaParameters() : previous_(meta_parameters) { meta_parameters = true; }
MetaParameters::~MetaParameters() { meta_parameters = previous_; }

std::int64_t count_parameters(const torch::nn::Module& module) {
  std::unordered_set<const void*> seen;
  std::int64_t total = 0;
  for (const at::Tensor& p : module.parameters(/*recurse=*/true))
    if (seen.insert(p.unsafeGetTensorImpl()).second) total += p.numel();
  return total;
}

}  // namespace ft::nn
