// CPU attention, forward + backward, two ways (not a test: prints medians and their ratio):
//   fused   fthost's path: grouped-query matmul, ft_kernels::masked_softmax (causal columns
//           skipped), matmul (sdk/src/nn/attention.cpp)
//   sdpa    LibTorch's at::scaled_dot_product_attention(is_causal, enable_gqa)
// on the benchmark models' attention shapes, interleaved A B A B so both see the same machine.
//   fthost_attention_bench [repeats]      (threads: OMP_NUM_THREADS / at::get_num_threads)
#include <ft_kernels/fused_ops.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

struct Shape {
  const char* name;
  std::int64_t batch, seq, heads, kv_heads, head_dim;
};

// q [b, h, s, d], k / v [b, kv, s, d].
at::Tensor fused_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& causal) {
  const std::int64_t b = q.size(0), h = q.size(1), s = q.size(2), d = q.size(3), kv = k.size(1);
  const at::Tensor grouped = q.reshape({b, kv, (h / kv) * s, d});
  const at::Tensor scores = at::matmul(grouped, k.transpose(-1, -2)).view({b, kv, h / kv, s, s});
  const at::Tensor probs = ft_kernels::masked_softmax(scores, causal, 1.0 / std::sqrt(static_cast<double>(d)))
                               .view({b, kv, (h / kv) * s, s});
  return at::matmul(probs, v).view({b, h, s, d});
}

at::Tensor sdpa_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, true, std::nullopt, q.size(1) != k.size(1));
}

double seconds_of(bool fused, const Shape& shape) {
  at::manual_seed(0);
  const auto opts = at::TensorOptions(at::kFloat);
  at::Tensor q = at::randn({shape.batch, shape.heads, shape.seq, shape.head_dim}, opts).requires_grad_(true);
  at::Tensor k = at::randn({shape.batch, shape.kv_heads, shape.seq, shape.head_dim}, opts).requires_grad_(true);
  at::Tensor v = at::randn({shape.batch, shape.kv_heads, shape.seq, shape.head_dim}, opts).requires_grad_(true);
  const at::Tensor causal = at::ones({shape.seq, shape.seq}, opts.dtype(at::kBool)).tril();
  const at::Tensor grad = at::randn_like(q);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) {
    at::Tensor out = fused ? fused_attention(q, k, v, causal) : sdpa_attention(q, k, v);
    torch::autograd::backward({out}, {grad});
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 10;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 5;
  std::printf("%d intra-op threads; forward + backward per call, median of %d interleaved pairs\n",
              at::get_num_threads(), repeats);
  for (const Shape& shape : {Shape{"5M (b 8, s 128, 4/2 heads)", 8, 128, 4, 2, 64},
                             Shape{"100M (b 4, s 256, 12/4 heads)", 4, 256, 12, 4, 64},
                             Shape{"1B (b 1, s 2048, 32/8 heads)", 1, 2048, 32, 8, 64}}) {
    std::vector<double> fused, sdpa, ratios;
    for (int r = 0; r < repeats; ++r) {
      fused.push_back(seconds_of(true, shape));
      sdpa.push_back(seconds_of(false, shape));
      ratios.push_back(sdpa.back() / fused.back());
    }
    std::printf("%-32s fused %8.2f ms   sdpa %8.2f ms   sdpa / fused: %.2f (median of pair ratios %.2f)\n", shape.name,
                median(fused) * 1e3, median(sdpa) * 1e3, median(sdpa) / median(fused), median(ratios));
  }
}
