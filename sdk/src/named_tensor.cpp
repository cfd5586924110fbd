#include <ft/errors.h>
#include <ft/model.h>
#include <ft/text.h>

#include <ATen/ATen.h>

namespace ft {

at::Tensor checkpoint_value(const NamedTensor& t) {
  if (t.parts.empty()) return t.tensor;
  std::vector<at::Tensor> parts;
  for (const at::Tensor& part : t.parts) parts.push_back(part.detach());
  return at::cat(parts, 0);
}

std::vector<std::int64_t> checkpoint_shape(const NamedTensor& t) {
  if (t.parts.empty()) return t.tensor.sizes().vec();
  std::vector<std::int64_t> shape = t.parts.front().sizes().vec();
  for (std::size_t i = 1; i < t.parts.size(); ++i) shape[0] += t.parts[i].size(0);
  return shape;
}

void assign_checkpoint_value(const NamedTensor& t, const at::Tensor& value) {
  at::NoGradGuard no_grad;
  if (t.parts.empty()) {
    t.tensor.copy_(value);
    return;
  }
  if (value.sizes().vec() != checkpoint_shape(t))
    throw Error("tensor \"" + t.name + "\": shape " + shape_text(value.sizes()) + ", the model's parts make " +
                shape_text(checkpoint_shape(t)));
  std::int64_t row = 0;
  for (const at::Tensor& part : t.parts) {
    part.copy_(value.narrow(0, row, part.size(0)));
    row += part.size(0);
  }
}

}  // namespace ft
