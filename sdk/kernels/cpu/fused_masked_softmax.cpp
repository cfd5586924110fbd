#include "fused_op_support.h"

#include <ft_kernels/fused_ops.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <limits>
#include <optional>

namespace ft_kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// For a mask whose every row allows exactly a prefix of the columns (the causal mask, also one
// sample per row block), the last allowed column of each row [masks, s_q]; nullopt otherwise.
std::optional<at::Tensor> prefix_limits(const at::Tensor& allowed_bytes) {
  const std::int64_t cols = allowed_bytes.size(-1), rows = allowed_bytes.numel() / cols;
  at::Tensor limits = at::empty({rows}, allowed_bytes.options().dtype(at::kLong));
  const std::uint8_t* a = allowed_bytes.data_ptr<std::uint8_t>();
  std::int64_t* out = limits.data_ptr<std::int64_t>();
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::uint8_t* row = a + r * cols;
    std::int64_t length = 0;
    while (length < cols && row[length]) ++length;
    for (std::int64_t j = length; j < cols; ++j)
      if (row[j]) return std::nullopt;
    out[r] = length - 1;
  }
  return limits;
}

struct MaskedSoftmaxFunction : torch::autograd::Function<MaskedSoftmaxFunction> {
  // scores [slabs, s_q, s_k] contiguous; `slabs_per_mask` consecutive slabs share one mask.
  // `limits` is empty unless every mask row is a prefix (prefix_limits).
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& scores, const at::Tensor& allowed_bytes,
                            const at::Tensor& limits_or_empty, std::int64_t slabs_per_mask, double scale) {
    const std::int64_t s_q = scores.size(-2), s_k = scores.size(-1), rows = scores.numel() / s_k;
    const at::Tensor limits = limits_or_empty.numel() > 0 ? limits_or_empty : at::Tensor();
    const std::int64_t masks = limits.defined() ? limits.numel() / s_q : allowed_bytes.numel() / (s_q * s_k);
    at::Tensor p = at::empty_like(scores);
    with_kernels(scores, [&](const auto& k, auto tag) {
      using T = decltype(tag);
      parallel_rows(rows, s_k, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t r = begin; r < end;) {
          const std::int64_t slab = r / s_q, q = r % s_q, n = std::min(end - r, s_q - q);
          const std::int64_t mask = masks == 1 ? 0 : slab / slabs_per_mask;
          const std::uint8_t* allowed =
              limits.defined() ? nullptr : allowed_bytes.data_ptr<std::uint8_t>() + (mask * s_q + q) * s_k;
          const std::int64_t* limit = limits.defined() ? limits.data_ptr<std::int64_t>() + mask * s_q + q : nullptr;
          k.masked_softmax_forward(typed<T>(scores) + r * s_k, allowed, limit, typed<T>(p) + r * s_k, n, s_k,
                                   static_cast<float>(scale));
          r += n;
        }
      });
    });
    ctx->save_for_backward({p});
    ctx->saved_data["scale"] = scale;
    return p;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor p = ctx->get_saved_variables()[0];
    const double scale = ctx->saved_data["scale"].toDouble();
    const at::Tensor gp = grads[0].contiguous();
    const std::int64_t s_k = p.size(-1), rows = p.numel() / s_k;
    at::Tensor gx = at::empty_like(p);
    with_kernels(p, [&](const auto& k, auto tag) {
      using T = decltype(tag);
      parallel_rows(rows, s_k, [&](std::int64_t begin, std::int64_t end) {
        k.masked_softmax_backward(typed<T>(gp) + begin * s_k, typed<T>(p) + begin * s_k, typed<T>(gx) + begin * s_k,
                                  end - begin, s_k, static_cast<float>(scale));
      });
    });
    return {gx, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor reference_masked_softmax(const at::Tensor& scores, const at::Tensor& allowed, double scale) {
  at::Tensor mask = allowed;
  if (allowed.dim() == 3)  // [b, s_q, s_k] against [b, heads..., s_q, s_k]
    for (std::int64_t axis = 3; axis < scores.dim(); ++axis) mask = mask.unsqueeze(1);
  const at::Tensor scaled = scores.to(at::kFloat) * scale;
  return at::softmax(scaled.masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity()), -1)
      .to(scores.scalar_type());
}

}  // namespace

at::Tensor masked_softmax(const at::Tensor& scores, const at::Tensor& allowed, double scale) {
  const bool mask_fits = allowed.scalar_type() == at::kBool && (allowed.dim() == 2 || allowed.dim() == 3) &&
                         scores.dim() >= 3 && allowed.size(-1) == scores.size(-1) &&
                         allowed.size(-2) == scores.size(-2) &&
                         (allowed.dim() == 2 || allowed.size(0) == scores.size(0));
  if (!takes_fused_path(scores) || !mask_fits) return reference_masked_softmax(scores, allowed, scale);
  const at::Tensor contiguous = scores.contiguous();
  const std::int64_t s_q = scores.size(-2), s_k = scores.size(-1);
  const std::int64_t slabs = scores.numel() / (s_q * s_k);
  const std::int64_t slabs_per_mask = allowed.dim() == 2 ? slabs : slabs / scores.size(0);
  const at::Tensor bytes = allowed.contiguous().view(at::kByte);
  const std::optional<at::Tensor> limits = prefix_limits(bytes);
  const at::Tensor p = MaskedSoftmaxFunction::apply(
      contiguous.view({slabs, s_q, s_k}), bytes, limits ? *limits : at::empty({0}, at::kLong), slabs_per_mask, scale);
  return p.view(scores.sizes());
}

}  // namespace ft_kernels
