// The fused CPU operations (sdk/kernels/cpu) against the unfused reference: the same function
// written here with plain ATen ops, as the model and loss computed it before. Forward values and
// gradients (through autograd, against a random upstream gradient) agree within 1e-6 of the
// tensor's largest value in float32; bfloat16 within bfloat16's resolution; and every fused op
// is bitwise repeatable, also across thread counts.
#include <ft/errors.h>
#include <ft_kernels/fused_ops.h>
#include <ft_kernels/parallel_loops.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace {

using Inputs = std::vector<at::Tensor>;
using Op = std::function<at::Tensor(const Inputs&)>;

// Largest difference relative to the reference's largest value (NaN-free inputs only).
double relative_difference(const at::Tensor& got, const at::Tensor& want) {
  const at::Tensor g = got.to(at::kDouble), w = want.to(at::kDouble);
  const double scale = std::max(w.abs().max().item<double>(), 1e-30);
  return (g - w).abs().max().item<double>() / scale;
}

// The op's output and the gradients of sum(output * upstream) for its first `differentiable`
// inputs (the others are masks, targets or tables).
Inputs value_and_gradients(const Op& op, const Inputs& inputs, const at::Tensor& upstream, std::size_t differentiable) {
  Inputs leaves;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    leaves.push_back(inputs[i].detach().clone().requires_grad_(i < differentiable));
  at::Tensor out = op(leaves);
  Inputs wrt;
  for (const auto& t : leaves)
    if (t.requires_grad()) wrt.push_back(t);
  Inputs result{out.detach()};
  for (const auto& g : torch::autograd::grad({(out.to(at::kFloat) * upstream).sum()}, wrt)) result.push_back(g);
  return result;
}

void expect_close(const Op& fused, const Op& reference, const Inputs& inputs, std::size_t differentiable,
                  double tolerance, const char* what) {
  const at::Tensor out = reference(inputs);
  at::manual_seed(7);
  const at::Tensor upstream = at::randn(out.sizes());
  const Inputs got = value_and_gradients(fused, inputs, upstream, differentiable);
  const Inputs want = value_and_gradients(reference, inputs, upstream, differentiable);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].scalar_type(), want[i].scalar_type()) << what << (i == 0 ? " value" : " gradient ") << i;
    EXPECT_LT(relative_difference(got[i], want[i]), tolerance) << what << (i == 0 ? " value" : " gradient ") << i;
  }
}

void expect_repeatable(const Op& fused, const Inputs& inputs, std::size_t differentiable, const char* what) {
  const int threads_before = at::get_num_threads();
  at::manual_seed(8);
  const at::Tensor upstream = at::randn(fused(inputs).sizes());
  std::vector<Inputs> runs;
  for (int threads : {2, 2, 1}) {
    at::set_num_threads(threads);
    runs.push_back(value_and_gradients(fused, inputs, upstream, differentiable));
  }
  at::set_num_threads(threads_before);
  for (std::size_t run = 1; run < runs.size(); ++run)
    for (std::size_t i = 0; i < runs[0].size(); ++i)
      EXPECT_TRUE(at::equal(runs[run][i], runs[0][i])) << what << " run " << run << " tensor " << i;
}

Inputs to_bf16(const Inputs& inputs) {
  Inputs out;
  for (const auto& t : inputs) out.push_back(t.is_floating_point() ? t.to(at::kBFloat16) : t);
  return out;
}

// bfloat16: the fused op against the reference computed in float32 on the same bfloat16 values
// (and rounded to bfloat16 where the reference rounds): a few bfloat16 ulps (2^-8 each).
void expect_bf16_close(const Op& fused, const Op& reference_f32, const Inputs& inputs, const char* what) {
  const Inputs half = to_bf16(inputs);
  Inputs widened;
  for (const auto& t : half) widened.push_back(t.is_floating_point() ? t.to(at::kFloat) : t);
  const at::Tensor got = fused(half);
  EXPECT_EQ(got.scalar_type(), at::kBFloat16) << what;
  EXPECT_LT(relative_difference(got, reference_f32(widened)), 4.0 / 256) << what;
}

// --- References: the unfused code the model and the loss ran before -----------------------
at::Tensor reference_rms_norm(const Inputs& in) {
  const at::Tensor xf = in[0].to(at::kFloat);
  return (xf * at::rsqrt(xf.pow(2).mean(-1, true) + 1e-5)).to(in[0].scalar_type()) * in[1];
}
at::Tensor reference_swiglu(const Inputs& in) { return at::silu(in[0]) * in[1]; }
at::Tensor reference_rotary(const Inputs& in) {
  const at::Tensor& x = in[0];
  const std::int64_t half = x.size(-1) / 2;
  const at::Tensor positions = in[1].dim() == 1 ? in[1].unsqueeze(0) : in[1];
  const at::Tensor angles = positions.to(at::kFloat).unsqueeze(-1) * in[2];
  const at::Tensor cos = angles.cos().unsqueeze(2), sin = angles.sin().unsqueeze(2);
  const at::Tensor xf = x.to(at::kFloat), x1 = xf.narrow(-1, 0, half), x2 = xf.narrow(-1, half, half);
  return at::cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1).to(x.scalar_type());
}
at::Tensor reference_masked_softmax(const Inputs& in, double scale) {
  const at::Tensor& scores = in[0];
  at::Tensor mask = in[1];
  if (mask.dim() == 3)
    for (std::int64_t axis = 3; axis < scores.dim(); ++axis) mask = mask.unsqueeze(1);
  const at::Tensor scaled =
      (scores.to(at::kFloat) * scale).masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity());
  return at::softmax(scaled, -1).to(scores.scalar_type());
}
at::Tensor reference_cross_entropy(const Inputs& in) {
  return at::cross_entropy_loss(in[0].to(at::kFloat), in[1], {}, at::Reduction::Sum, -100);
}

// --- Fused ops under test --------------------------------------------------------------------
at::Tensor fused_rms_norm(const Inputs& in) { return ft_kernels::rms_norm(in[0], in[1], 1e-5); }
at::Tensor fused_swiglu(const Inputs& in) { return ft_kernels::swiglu(in[0], in[1]); }
at::Tensor fused_rotary(const Inputs& in) { return ft_kernels::rotary(in[0], ft_kernels::rotary_tables(in[1], in[2])); }
at::Tensor fused_cross_entropy(const Inputs& in) { return ft_kernels::cross_entropy_sum(in[0], in[1], -100); }

// 37 rows (not a multiple of the 64-row blocks), 200 columns (not a multiple of 16 lanes).
Inputs rms_norm_inputs() {
  at::manual_seed(1);
  return {at::randn({37, 200}) * 3, at::randn({200})};
}
Inputs swiglu_inputs() {
  at::manual_seed(2);
  at::Tensor gate = at::randn({100, 77}) * 4;
  gate[0][0] = 100;  // the sigmoid saturates on both sides
  gate[0][1] = -100;
  return {gate, at::randn({100, 77})};
}
Inputs rotary_inputs() {
  at::manual_seed(3);
  const at::Tensor inverse_frequencies = 1.0 / at::pow(10000.0, at::arange(0, 8, 2).to(at::kFloat) / 8.0);
  return {at::randn({2, 5, 3, 8}), at::randint(0, 4096, {2, 5}, at::kLong), inverse_frequencies};
}
// [b, kv heads, group, s, s] scores as the attention computes them.
at::Tensor attention_scores() {
  at::manual_seed(4);
  return at::randn({2, 3, 2, 9, 9}) * 4;
}
at::Tensor causal_mask() { return at::ones({9, 9}, at::kBool).tril(); }
// Two samples packed in each row of the batch: block-causal, so not a prefix mask.
at::Tensor packed_mask() {
  at::Tensor mask = at::zeros({2, 9, 9}, at::kBool);
  mask[0].slice(0, 0, 4).slice(1, 0, 4).copy_(at::ones({4, 4}, at::kBool).tril());
  mask[0].slice(0, 4, 9).slice(1, 4, 9).copy_(at::ones({5, 5}, at::kBool).tril());
  mask[1].copy_(at::ones({9, 9}, at::kBool).tril());
  return mask;
}
Inputs cross_entropy_inputs() {
  at::manual_seed(5);
  at::Tensor targets = at::randint(0, 300, {50}, at::kLong);
  targets.slice(0, 0, 50, 7).fill_(-100);
  return {at::randn({50, 300}) * 5, targets};
}

constexpr double kFloat32Tolerance = 1e-6;

TEST(FusedCpuKernels, RmsNormMatchesTheReference) {
  expect_close(fused_rms_norm, reference_rms_norm, rms_norm_inputs(), 2, kFloat32Tolerance, "rms_norm");
  expect_repeatable(fused_rms_norm, rms_norm_inputs(), 2, "rms_norm");
  expect_bf16_close(fused_rms_norm, reference_rms_norm, rms_norm_inputs(), "rms_norm bf16");
}

TEST(FusedCpuKernels, SwigluMatchesTheReference) {
  expect_close(fused_swiglu, reference_swiglu, swiglu_inputs(), 2, kFloat32Tolerance, "swiglu");
  expect_repeatable(fused_swiglu, swiglu_inputs(), 2, "swiglu");
  expect_bf16_close(fused_swiglu, reference_swiglu, swiglu_inputs(), "swiglu bf16");
}

TEST(FusedCpuKernels, RotaryMatchesTheReference) {
  expect_close(fused_rotary, reference_rotary, rotary_inputs(), 1, kFloat32Tolerance, "rotary");
  expect_repeatable(fused_rotary, rotary_inputs(), 1, "rotary");
  expect_bf16_close(fused_rotary, reference_rotary, rotary_inputs(), "rotary bf16");
  // One set of positions for the whole batch.
  Inputs shared = rotary_inputs();
  shared[1] = at::arange(5, at::kLong);
  expect_close(fused_rotary, reference_rotary, shared, 1, kFloat32Tolerance, "rotary, shared positions");
}

TEST(FusedCpuKernels, MaskedSoftmaxMatchesTheReferenceForCausalAndPackedMasks) {
  const double scale = 1 / std::sqrt(8.0);
  const Op fused = [scale](const Inputs& in) { return ft_kernels::masked_softmax(in[0], in[1], scale); };
  const Op reference = [scale](const Inputs& in) { return reference_masked_softmax(in, scale); };
  for (const at::Tensor& mask : {causal_mask(), packed_mask()}) {
    const Inputs inputs{attention_scores(), mask};
    const char* what = mask.dim() == 2 ? "causal softmax" : "packed softmax";
    expect_close(fused, reference, inputs, 1, kFloat32Tolerance, what);
    expect_repeatable(fused, inputs, 1, what);
    expect_bf16_close(fused, reference, inputs, what);
    // Masked positions are exactly zero.
    at::Tensor allowed = mask.dim() == 2 ? mask : mask.view({2, 1, 1, 9, 9});
    EXPECT_EQ(fused(inputs).masked_select(allowed.logical_not().expand({2, 3, 2, 9, 9})).abs().max().item<float>(), 0);
  }
}

// The row kernels reduce in blocks of 16 columns and then a remainder; 9 columns exercise only
// the remainder. 53 columns give causal rows that end before, at and past one and several whole
// blocks, and a random mask (not a prefix) takes the per-column path over the same lengths.
TEST(FusedCpuKernels, MaskedSoftmaxMatchesTheReferenceOnRowsOfSeveralBlocks) {
  const std::int64_t s = 53;
  const double scale = 1 / std::sqrt(8.0);
  const Op fused = [scale](const Inputs& in) { return ft_kernels::masked_softmax(in[0], in[1], scale); };
  const Op reference = [scale](const Inputs& in) { return reference_masked_softmax(in, scale); };
  at::manual_seed(6);
  const at::Tensor scores = at::randn({2, 2, 2, s, s}) * 4;
  at::Tensor random_mask = at::rand({2, s, s}) < 0.7;
  random_mask.select(-1, 0).fill_(true);  // no fully masked row: that case has its own test
  for (const at::Tensor& mask : {at::ones({s, s}, at::kBool).tril(), random_mask}) {
    const Inputs inputs{scores, mask};
    const char* what = mask.dim() == 2 ? "causal softmax, 53 columns" : "random-mask softmax, 53 columns";
    expect_close(fused, reference, inputs, 1, kFloat32Tolerance, what);
    expect_repeatable(fused, inputs, 1, what);
  }
}

TEST(FusedCpuKernels, MaskedSoftmaxOfAFullyMaskedRowIsNanAsTorchs) {
  at::Tensor mask = causal_mask();
  mask[3].fill_(false);
  const at::Tensor p = ft_kernels::masked_softmax(attention_scores(), mask, 1.0);
  EXPECT_TRUE(at::isnan(p.select(-2, 3)).all().item<bool>());
  EXPECT_FALSE(at::isnan(p.select(-2, 2)).any().item<bool>());
}

TEST(FusedCpuKernels, CrossEntropySumMatchesTheReference) {
  expect_close(fused_cross_entropy, reference_cross_entropy, cross_entropy_inputs(), 1, kFloat32Tolerance,
               "cross_entropy");
  expect_repeatable(fused_cross_entropy, cross_entropy_inputs(), 1, "cross_entropy");
  // bfloat16 logits are read directly; the loss is float32, as the reference's upcast gives.
  const Inputs half = to_bf16(cross_entropy_inputs());
  const at::Tensor loss = fused_cross_entropy(half);
  EXPECT_EQ(loss.scalar_type(), at::kFloat);
  EXPECT_LT(relative_difference(loss, reference_cross_entropy(half)), 1e-6);
}

// torchtune's CEWithChunkedOutputLoss: each sequence chunk's loss on its own, then their sum. The
// one-pass kernel must give exactly (bitwise) what summing the per-chunk losses gives, for
// chunk counts that divide the sequence, leave a short last chunk, and exceed it.
TEST(FusedCpuKernels, ChunkedCrossEntropySumEqualsTheSumOfItsChunks) {
  at::manual_seed(9);
  const std::int64_t batch = 3, seq = 13, vocab = 70;
  const at::Tensor logits = at::randn({batch, seq, vocab}) * 5;
  at::Tensor targets = at::randint(0, vocab, {batch, seq}, at::kLong);
  targets.select(1, 4).fill_(-100);
  for (std::int64_t chunks : {1, 4, 5, 13, 20}) {
    const std::string what = "chunked cross_entropy, " + std::to_string(chunks) + " chunks";
    const Op chunked = [chunks](const Inputs& in) {
      return ft_kernels::chunked_cross_entropy_sum(in[0], in[1], -100, chunks);
    };
    const Op chunk_by_chunk = [chunks](const Inputs& in) {
      const std::vector<at::Tensor> l = in[0].chunk(chunks, 1), t = in[1].chunk(chunks, 1);
      at::Tensor total = at::zeros({}, at::kFloat);
      for (std::size_t i = 0; i < l.size(); ++i) total = total + ft_kernels::cross_entropy_sum(l[i], t[i], -100);
      return total;
    };
    const Op reference = [](const Inputs& in) {
      return reference_cross_entropy({in[0].reshape({-1, in[0].size(-1)}), in[1].reshape({-1})});
    };
    const Inputs inputs{logits, targets};
    const at::Tensor upstream = at::full({}, 0.37);
    const Inputs got = value_and_gradients(chunked, inputs, upstream, 1);
    const Inputs want = value_and_gradients(chunk_by_chunk, inputs, upstream, 1);
    EXPECT_TRUE(at::equal(got[0], want[0])) << what << ": " << got[0].item<float>() << " vs " << want[0].item<float>();
    EXPECT_TRUE(at::equal(got[1], want[1])) << what << " gradient";
    expect_close(chunked, reference, inputs, 1, kFloat32Tolerance, what.c_str());
    expect_repeatable(chunked, inputs, 1, what.c_str());
  }
}

TEST(FusedCpuKernels, ChunkedCrossEntropyNamesTheShapesItExpects) {
  try {
    ft_kernels::chunked_cross_entropy_sum(at::randn({6, 70}), at::zeros({6}, at::kLong), -100, 2);
    FAIL() << "expected an error";
  } catch (const ft::Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected logits [b, s, vocab] and targets [b, s]"), std::string::npos)
        << e.what();
  }
}

TEST(FusedCpuKernels, CrossEntropyNamesAnOutOfRangeTarget) {
  Inputs inputs = cross_entropy_inputs();
  inputs[1][3] = 300;
  try {
    fused_cross_entropy(inputs);
    FAIL() << "expected an error";
  } catch (const ft::Error& e) {
    EXPECT_NE(std::string(e.what()).find("target id 300 is outside the vocabulary [0, 300)"), std::string::npos)
        << e.what();
  }
}

// A kernel library compiled without OpenMP runs at::parallel_for on one thread whatever
// at::set_num_threads says; fthost's were, until the build linked LibTorch's OpenMP runtime.
TEST(FusedCpuKernels, ParallelLoopsRunOnLibTorchsThreads) {
  const int threads_before = at::get_num_threads();
  for (int threads : {1, 3}) {
    at::set_num_threads(threads);
    EXPECT_EQ(ft_kernels::threads_in_parallel_loops(), threads);
  }
  at::set_num_threads(threads_before);
}

}  // namespace
