#include <ft/errors.h>
#include <ft/torch_compat.h>
#include <ft_kernels/grouped_mm.h>
#include <ft_kernels/kernel_choice.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <string>
#include <vector>

namespace ft_kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::vector<std::int64_t> host_sizes(const at::Tensor& group_sizes) {
  const at::Tensor sizes = group_sizes.to(at::kCPU, at::kLong).contiguous();
  return std::vector<std::int64_t>(sizes.data_ptr<std::int64_t>(), sizes.data_ptr<std::int64_t>() + sizes.numel());
}

// One GEMM per group over its block of rows; the blocks of every product are written in place.
struct GroupedMmFunction : torch::autograd::Function<GroupedMmFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor& group_sizes) {
    const std::vector<std::int64_t> sizes = host_sizes(group_sizes);
    at::Tensor y = at::empty({x.size(0), w.size(1)}, x.options());
    std::int64_t row = 0;
    for (std::size_t g = 0; g < sizes.size(); ++g) {
      if (sizes[g] == 0) continue;
      at::Tensor out = y.narrow(0, row, sizes[g]);
      at::mm_out(out, x.narrow(0, row, sizes[g]), w[static_cast<std::int64_t>(g)].t());
      row += sizes[g];
    }
    ctx->save_for_backward({x, w});
    ctx->saved_data["sizes"] = c10::IValue(sizes);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &w = saved[1];
    const std::vector<std::int64_t> sizes = ctx->saved_data["sizes"].toIntVector();
    const at::Tensor gy = grads[0].contiguous();
    at::Tensor gx, gw;
    if (ctx->needs_input_grad(0)) gx = at::empty_like(x);
    if (ctx->needs_input_grad(1)) gw = at::empty_like(w);
    std::int64_t row = 0;
    for (std::size_t g = 0; g < sizes.size(); ++g) {
      const auto e = static_cast<std::int64_t>(g);
      if (sizes[g] == 0) {
        if (gw.defined()) gw[e].zero_();
        continue;
      }
      const at::Tensor block_gy = gy.narrow(0, row, sizes[g]);
      if (gx.defined()) {
        at::Tensor out = gx.narrow(0, row, sizes[g]);
        at::mm_out(out, block_gy, w[e]);
      }
      if (gw.defined()) {
        at::Tensor out = gw[e];
        at::mm_out(out, block_gy.t(), x.narrow(0, row, sizes[g]));
      }
      row += sizes[g];
    }
    return {gx, gw, at::Tensor()};
  }
};

void check_operands(const at::Tensor& x, const at::Tensor& w, const at::Tensor& group_sizes) {
  if (x.dim() != 2 || w.dim() != 3 || group_sizes.dim() != 1 || x.size(1) != w.size(2) ||
      group_sizes.size(0) != w.size(0))
    throw ft::Error("grouped_mm: x " + std::to_string(x.dim()) + "-d [n, in], w [groups, out, in] and group_sizes " +
                    "[groups] do not fit together");
  if (x.scalar_type() != w.scalar_type()) throw ft::Error("grouped_mm: x and w must have one dtype");
}

}  // namespace

bool grouped_mm_uses_grouped_gemm(const at::Tensor& x, const at::Tensor& w) {
  // LibTorch's grouped GEMM takes bfloat16 on compute capability 9.0 and newer, with rows of a
  // multiple of 16 bytes.
  return x.is_cuda() && x.scalar_type() == at::kBFloat16 && w.scalar_type() == at::kBFloat16 &&
         ft::compat::cuda_compute_capability_major(x.get_device()) >= 9 && x.size(1) % 8 == 0 && w.size(1) % 8 == 0;
}

at::Tensor grouped_mm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& group_sizes) {
  check_operands(x, w, group_sizes);
  if (grouped_mm_uses_grouped_gemm(x, w)) {
    const at::Tensor offsets = at::cumsum(group_sizes, 0).to(at::kInt);
    return ft::compat::grouped_mm(x, w.transpose(-2, -1), offsets);
  }
  if (!fused_kernels_enabled()) {
    // FT_CPU_KERNELS=aten: one autograd matmul per group and a concatenation, the reference the
    // kernel is measured against.
    const std::vector<std::int64_t> sizes = host_sizes(group_sizes);
    std::vector<at::Tensor> blocks;
    std::int64_t row = 0;
    for (std::size_t g = 0; g < sizes.size(); ++g) {
      blocks.push_back(at::mm(x.narrow(0, row, sizes[g]), w[static_cast<std::int64_t>(g)].t()));
      row += sizes[g];
    }
    return at::cat(blocks);
  }
  return GroupedMmFunction::apply(x.contiguous(), w, group_sizes);
}

}  // namespace ft_kernels
