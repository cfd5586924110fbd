#include "fused_op_support.h"

#include <ft_kernels/fused_ops.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

namespace ft_kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// x [b, s, heads, 2 * half] rotated by tables [b, s, half] (already expanded to x's batch).
at::Tensor rotate(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, bool inverse) {
  const std::int64_t rows = x.size(0) * x.size(1), heads = x.size(2), half = x.size(3) / 2;
  at::Tensor y = at::empty_like(x);
  with_kernels(x, [&](const auto& k, auto tag) {
    using T = decltype(tag);
    parallel_rows(rows, heads * 2 * half, [&](std::int64_t begin, std::int64_t end) {
      k.rotary(typed<T>(x) + begin * heads * 2 * half, cos.data_ptr<float>() + begin * half,
               sin.data_ptr<float>() + begin * half, typed<T>(y) + begin * heads * 2 * half, end - begin, heads, half,
               inverse);
    });
  });
  return y;
}

struct RotaryFunction : torch::autograd::Function<RotaryFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    ctx->saved_data["cos"] = cos;
    ctx->saved_data["sin"] = sin;
    return rotate(x.contiguous(), cos, sin, /*inverse=*/false);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor cos = ctx->saved_data["cos"].toTensor(), sin = ctx->saved_data["sin"].toTensor();
    return {rotate(grads[0].contiguous(), cos, sin, /*inverse=*/true), at::Tensor(), at::Tensor()};
  }
};

at::Tensor reference_rotary(const at::Tensor& x, const RotaryTables& tables) {
  const std::int64_t half = x.size(-1) / 2;
  // In float32, or in float64 for a float64 model: the tables are float32 values either way (as
  // Hugging Face computes them), but rounding a float64 activation to float32 would lose its bits.
  const auto wide = x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor cos = tables.cos.unsqueeze(2).to(wide), sin = tables.sin.unsqueeze(2).to(wide);  // [b, s, 1, half]
  const at::Tensor xf = x.to(wide);
  const at::Tensor x1 = xf.narrow(-1, 0, half), x2 = xf.narrow(-1, half, half);
  return at::cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1).to(x.scalar_type());
}

}  // namespace

RotaryTables rotary_tables(const at::Tensor& positions, const at::Tensor& inverse_frequencies) {
  const at::Tensor pos = positions.dim() == 1 ? positions.unsqueeze(0) : positions;  // [b or 1, s]
  const at::Tensor angles = pos.to(at::kFloat).unsqueeze(-1) * inverse_frequencies.to(pos.device());
  return {angles.cos().contiguous(), angles.sin().contiguous()};
}

at::Tensor rotary(const at::Tensor& x, const RotaryTables& tables) {
  if (!takes_fused_path(x) || x.dim() != 4 || x.size(-1) % 2 != 0) return reference_rotary(x, tables);
  const std::int64_t b = x.size(0);
  at::Tensor cos = tables.cos, sin = tables.sin;
  if (cos.size(0) != b) {  // one set of positions for the whole batch
    cos = cos.expand({b, cos.size(1), cos.size(2)}).contiguous();
    sin = sin.expand({b, sin.size(1), sin.size(2)}).contiguous();
  }
  return RotaryFunction::apply(x, cos, sin);
}

}  // namespace ft_kernels
