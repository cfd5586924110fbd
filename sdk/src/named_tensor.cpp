#include <ft/errors.h>
#include <ft/model.h>
#include <ft/text.h>

#include <ATen/ATen.h>

namespace ft {

namespace {

// The live value in the model's own layout: the tensor, or the parts concatenated.
at::Tensor live_value(const NamedTensor& t) {
  if (t.parts.empty()) return t.tensor.detach();
  std::vector<at::Tensor> parts;
  for (const at::Tensor& part : t.parts) parts.push_back(part.detach());
  return at::cat(parts, t.parts_dim);
}

std::vector<std::int64_t> live_shape(const NamedTensor& t) {
  if (t.parts.empty()) return t.tensor.sizes().vec();
  std::vector<std::int64_t> shape = t.parts.front().sizes().vec();
  const auto dim =
      static_cast<std::size_t>(t.parts_dim < 0 ? t.parts_dim + static_cast<std::int64_t>(shape.size()) : t.parts_dim);
  for (std::size_t i = 1; i < t.parts.size(); ++i) shape[dim] += t.parts[i].size(static_cast<std::int64_t>(dim));
  return shape;
}

}  // namespace

at::Tensor checkpoint_value(const NamedTensor& t) {
  if (!t.to_checkpoint) return live_value(t);
  return t.to_checkpoint(live_value(t)).contiguous();
}

std::vector<std::int64_t> checkpoint_shape(const NamedTensor& t) {
  if (!t.to_checkpoint) return live_shape(t);
  // The layout change applied to a tensor without storage: the shape, nothing allocated.
  const at::Tensor shapes_only = at::empty(live_shape(t), at::TensorOptions().device(at::kMeta));
  return t.to_checkpoint(shapes_only).sizes().vec();
}

void assign_checkpoint_value(const NamedTensor& t, const at::Tensor& value) {
  at::NoGradGuard no_grad;
  if (t.parts.empty() && !t.from_checkpoint) {
    t.tensor.copy_(value);
    return;
  }
  if (value.sizes().vec() != checkpoint_shape(t))
    throw Error("tensor \"" + t.name + "\": shape " + shape_text(value.sizes()) + ", the model's parameters make " +
                shape_text(checkpoint_shape(t)));
  const at::Tensor live = t.from_checkpoint ? t.from_checkpoint(value) : value;
  if (t.parts.empty()) {
    t.tensor.copy_(live);
    return;
  }
  std::int64_t offset = 0;
  for (const at::Tensor& part : t.parts) {
    const std::int64_t width = part.size(t.parts_dim);
    part.copy_(live.narrow(t.parts_dim, offset, width));
    offset += width;
  }
}

}  // namespace ft
