#include "fused_op_support.h"

#include <ft_kernels/fused_ops.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <vector>

namespace ft_kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The scale's gradient sums over rows: each block of this many rows sums into its own partial,
// and the partials are added in block order, so the result is the same for any thread count.
constexpr std::int64_t kRowsPerBlock = 64;

struct RmsNormFunction : torch::autograd::Function<RmsNormFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x_in, const at::Tensor& scale_in, double eps) {
    const at::Tensor x = x_in.contiguous(), scale = scale_in.contiguous();
    const std::int64_t dim = x.size(-1), rows = x.numel() / dim;
    at::Tensor y = at::empty_like(x);
    at::Tensor rstd = at::empty({rows}, x.options().dtype(at::kFloat));
    with_kernels(x, [&](const auto& k, auto tag) {
      using T = decltype(tag);
      parallel_rows(rows, dim, [&](std::int64_t begin, std::int64_t end) {
        k.rms_norm_forward(typed<T>(x) + begin * dim, typed<T>(scale), typed<T>(y) + begin * dim,
                           rstd.data_ptr<float>() + begin, end - begin, dim, static_cast<float>(eps));
      });
    });
    ctx->save_for_backward({x, scale});
    ctx->saved_data["rstd"] = rstd;
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &scale = saved[1];
    const at::Tensor rstd = ctx->saved_data["rstd"].toTensor();
    const at::Tensor gy = grads[0].contiguous();
    const std::int64_t dim = x.size(-1), rows = x.numel() / dim;
    const std::int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
    at::Tensor gx = at::empty_like(x);
    at::Tensor partials = at::zeros({std::max<std::int64_t>(blocks, 1), dim}, x.options().dtype(at::kFloat));
    with_kernels(x, [&](const auto& k, auto tag) {
      using T = decltype(tag);
      at::parallel_for(0, blocks, 1, [&](std::int64_t first, std::int64_t last) {
        for (std::int64_t block = first; block < last; ++block) {
          const std::int64_t begin = block * kRowsPerBlock, n = std::min(kRowsPerBlock, rows - begin);
          k.rms_norm_backward(typed<T>(gy) + begin * dim, typed<T>(x) + begin * dim, typed<T>(scale),
                              rstd.data_ptr<float>() + begin, typed<T>(gx) + begin * dim,
                              partials.data_ptr<float>() + block * dim, n, dim);
        }
      });
    });
    at::Tensor gscale = at::zeros({dim}, x.options().dtype(at::kFloat));
    float* total = gscale.data_ptr<float>();
    const float* part = partials.data_ptr<float>();
    for (std::int64_t block = 0; block < blocks; ++block)
      for (std::int64_t i = 0; i < dim; ++i) total[i] += part[block * dim + i];
    return {gx, gscale.to(scale.scalar_type()), at::Tensor()};
  }
};

at::Tensor reference_rms_norm(const at::Tensor& x, const at::Tensor& scale, double eps) {
  // float32, as Hugging Face normalises; float64 stays float64 (float32 would drop its bits).
  const at::Tensor xf = x.to(x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat);
  return (xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps)).to(x.scalar_type()) * scale;
}

}  // namespace

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& scale, double eps) {
  const bool scales_each_feature = scale.dim() == 1 && x.size(-1) == scale.size(0);
  if (x.is_cuda() && scales_each_feature && scale.scalar_type() == x.scalar_type()) {
    // LibTorch's fused kernel, without its weight: it normalises in float32 and rounds once to
    // x's dtype, and the scale multiplies after that in x's dtype, as Hugging Face's and
    // torchtune's RMSNorm round (a weighted fused call would round the product once instead).
    return at::rms_norm(x, {x.size(-1)}, std::nullopt, eps) * scale;
  }
  if (!takes_fused_path(x, scale) || !scales_each_feature) return reference_rms_norm(x, scale, eps);
  return RmsNormFunction::apply(x, scale, eps);
}

}  // namespace ft_kernels
