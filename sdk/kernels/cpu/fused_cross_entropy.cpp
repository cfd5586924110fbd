#include "fused_op_support.h"

#include <ft/errors.h>
#include <ft/text.h>
#include <ft_kernels/fused_ops.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <string>
#include <vector>

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

// The row losses summed as CEWithChunkedOutputLoss adds them: rows are [batch, seq] in row-major
// order; each sequence chunk (torch.chunk's split: ceil(seq / chunks) positions) over every batch
// row, in the order that chunk's own [b, s_i] rows have, in double rounded once to float32; then
// the chunk totals in float32, in order. With one chunk: all rows in order, rounded once.
float chunked_total(const float* row_loss, std::int64_t rows, std::int64_t seq, std::int64_t chunks) {
  const std::int64_t batch = rows / seq, chunk_len = (seq + chunks - 1) / chunks;
  float total = 0;
  for (std::int64_t start = 0; start < seq; start += chunk_len) {
    const std::int64_t end = std::min(seq, start + chunk_len);
    double chunk = 0;
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t i = start; i < end; ++i) chunk += row_loss[b * seq + i];
    total += static_cast<float>(chunk);
  }
  return total;
}

struct CrossEntropyFunction : torch::autograd::Function<CrossEntropyFunction> {
  // `seq` and `chunks` only group the rows for the sum (chunked_total); every row's loss and
  // gradient is the same whatever they are.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& logits, const at::Tensor& targets,
                            std::int64_t ignore_index, std::int64_t seq, std::int64_t chunks) {
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
    // In a fixed order, in double: the same on every run and for any thread count.
    const float total = chunked_total(row_loss.data_ptr<float>(), rows, seq, chunks);
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
    return {g, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

bool takes_fused_cross_entropy(const at::Tensor& logits, const at::Tensor& targets) {
  return takes_fused_path(logits) && targets.device().is_cpu() && targets.scalar_type() == at::kLong;
}

at::Tensor fused_cross_entropy_sum(const at::Tensor& logits, const at::Tensor& targets, std::int64_t ignore_index,
                                   std::int64_t seq, std::int64_t chunks) {
  const at::Tensor flat_logits = logits.reshape({-1, logits.size(-1)});
  const at::Tensor flat_targets = targets.reshape({-1}).contiguous();
  check_targets(flat_targets, flat_logits.size(1), ignore_index);
  return CrossEntropyFunction::apply(flat_logits.contiguous(), flat_targets, ignore_index, seq, chunks);
}

}  // namespace

at::Tensor cross_entropy_sum(const at::Tensor& logits, const at::Tensor& targets, std::int64_t ignore_index) {
  if (!takes_fused_cross_entropy(logits, targets))
    return at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}).to(at::kFloat), targets.reshape({-1}),
                                  /*weight=*/{}, at::Reduction::Sum, ignore_index);
  const std::int64_t rows = targets.numel();
  return fused_cross_entropy_sum(logits, targets, ignore_index, std::max<std::int64_t>(rows, 1), 1);
}

at::Tensor chunked_cross_entropy_sum(const at::Tensor& logits, const at::Tensor& targets, std::int64_t ignore_index,
                                     std::int64_t sequence_chunks) {
  if (logits.dim() != 3 || targets.dim() != 2 || logits.size(0) != targets.size(0) || logits.size(1) != targets.size(1))
    throw ft::Error("chunked cross-entropy: expected logits [b, s, vocab] and targets [b, s], got logits " +
                    ft::shape_text(logits.sizes()) + " and targets " + ft::shape_text(targets.sizes()));
  if (sequence_chunks < 1)
    throw ft::Error("chunked cross-entropy: sequence_chunks must be at least 1, got " +
                    std::to_string(sequence_chunks));
  if (!takes_fused_cross_entropy(logits, targets) || targets.size(1) == 0) {
    const std::vector<at::Tensor> logit_chunks = logits.chunk(sequence_chunks, 1);
    const std::vector<at::Tensor> target_chunks = targets.chunk(sequence_chunks, 1);
    at::Tensor total = at::zeros({}, logits.options().dtype(at::kFloat));
    for (std::size_t i = 0; i < logit_chunks.size(); ++i)
      total = total + cross_entropy_sum(logit_chunks[i], target_chunks[i], ignore_index);
    return total;
  }
  return fused_cross_entropy_sum(logits, targets, ignore_index, targets.size(1), sequence_chunks);
}

}  // namespace ft_kernels
