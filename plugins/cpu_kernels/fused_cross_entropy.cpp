#include "fused_op_support.h"

#include <ft/errors.h>
#include <ft_kernels/fused_ops.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <string>

namespace ft_kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

void check_targets(const at::Tensor& targets, std::int64_t vocab, std::int64_t ignore_index) {
  const std::int64_t* t = targets.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < targets.numel(); ++i)
    if (t[i] != ignore_index && (t[i] < 0 || t[i] >= vocab))
      throw ft::Error("cross-entropy: target id " + std::to_string(t[i]) + " is outside the vocabulary [0, " +
                      std::to_string(vocab) + ") and is not ignore_index (" + std::to_string(ignore_index) + ")");
}

struct CrossEntropyFunction : torch::autograd::Function<CrossEntropyFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& logits, const at::Tensor& targets,
                            std::int64_t ignore_index) {
    const std::int64_t rows = logits.size(0), vocab = logits.size(1);
    at::Tensor lse = at::empty({rows}, logits.options().dtype(at::kFloat));
    at::Tensor row_loss = at::empty({rows}, logits.options().dtype(at::kFloat));
    with_kernels(logits, [&](const auto& k, auto tag) {
      using T = decltype(tag);
      parallel_rows(rows, vocab, [&](std::int64_t begin, std::int64_t end) {
        k.cross_entropy_forward(typed<T>(logits) + begin * vocab, targets.data_ptr<std::int64_t>() + begin,
                                lse.data_ptr<float>() + begin, row_loss.data_ptr<float>() + begin, end - begin, vocab,
                                ignore_index);
      });
    });
    // In row order, in double: one rounding at the end, the same on every run.
    double total = 0;
    const float* l = row_loss.data_ptr<float>();
    for (std::int64_t r = 0; r < rows; ++r) total += l[r];
    ctx->save_for_backward({logits});
    ctx->saved_data["targets"] = targets;
    ctx->saved_data["lse"] = lse;
    ctx->saved_data["ignore_index"] = ignore_index;
    return at::scalar_tensor(total, logits.options().dtype(at::kFloat));
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor logits = ctx->get_saved_variables()[0];
    const at::Tensor targets = ctx->saved_data["targets"].toTensor(), lse = ctx->saved_data["lse"].toTensor();
    const std::int64_t ignore_index = ctx->saved_data["ignore_index"].toInt();
    const float gloss = grads[0].item<float>();
    const std::int64_t rows = logits.size(0), vocab = logits.size(1);
    at::Tensor g = at::empty_like(logits);
    with_kernels(logits, [&](const auto& k, auto tag) {
      using T = decltype(tag);
      parallel_rows(rows, vocab, [&](std::int64_t begin, std::int64_t end) {
        k.cross_entropy_backward(typed<T>(logits) + begin * vocab, targets.data_ptr<std::int64_t>() + begin,
                                 lse.data_ptr<float>() + begin, typed<T>(g) + begin * vocab, end - begin, vocab,
                                 ignore_index, gloss);
      });
    });
    return {g, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor cross_entropy_sum(const at::Tensor& logits, const at::Tensor& targets, std::int64_t ignore_index) {
  const at::Tensor flat_logits = logits.reshape({-1, logits.size(-1)});
  const at::Tensor flat_targets = targets.reshape({-1});
  if (!takes_fused_path(flat_logits) || !flat_targets.device().is_cpu() || flat_targets.scalar_type() != at::kLong)
    return at::cross_entropy_loss(flat_logits.to(at::kFloat), flat_targets, /*weight=*/{}, at::Reduction::Sum,
                                  ignore_index);
  const at::Tensor contiguous_targets = flat_targets.contiguous();
  check_targets(contiguous_targets, flat_logits.size(1), ignore_index);
  return CrossEntropyFunction::apply(flat_logits.contiguous(), contiguous_targets, ignore_index);
}

}  // namespace ft_kernels
