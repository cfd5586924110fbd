#include <ft/nn/rotary_embedding.h>

#include <ft_kernels/fused_ops.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cmath>

namespace ft::nn {

at::Tensor rope_inverse_frequencies(std::int64_t head_dim, double base,
                                    const std::optional<Llama3RopeScaling>& scaling) {
  at::Tensor exponents = at::arange(0, head_dim, 2, at::kLong).to(at::kFloat) / static_cast<double>(head_dim);
  at::Tensor freqs = 1.0 / at::pow(base, exponents);
  if (!scaling) return freqs;
  // Llama 3.1: long wavelengths are slowed by `factor`, short ones kept, the band between
  // interpolated smoothly (torchtune's Llama3ScaledRoPE.apply_scaling, vectorised).
  const double old_context = static_cast<double>(scaling->original_max_position_embeddings);
  const double low_freq_wavelen = old_context / scaling->low_freq_factor;
  const double high_freq_wavelen = old_context / scaling->high_freq_factor;
  at::Tensor wavelen = (2.0 * M_PI) / freqs;
  at::Tensor smooth =
      (old_context / wavelen - scaling->low_freq_factor) / (scaling->high_freq_factor - scaling->low_freq_factor);
  at::Tensor interpolated = (1.0 - smooth) * freqs / scaling->factor + smooth * freqs;
  at::Tensor scaled = at::where(wavelen > low_freq_wavelen, freqs / scaling->factor, interpolated);
  return at::where(wavelen < high_freq_wavelen, freqs, scaled);
}

namespace {

// The cos/sin tables depend only on the positions and the frequencies, which every layer of one
// forward pass shares (and a checkpointed layer's recompute too): they are computed once per
// positions tensor and reused while that tensor is unchanged. Holding the tensor keeps its
// address from being reused by another.
ft_kernels::RotaryTables shared_tables(const at::Tensor& positions, const at::Tensor& inverse_frequencies) {
  struct Entry {
    at::Tensor positions, inverse_frequencies;
    std::int64_t version = -1;
    ft_kernels::RotaryTables tables;
  };
  thread_local Entry entry;
  if (positions.is_inference()) return ft_kernels::rotary_tables(positions, inverse_frequencies);
  const auto version = static_cast<std::int64_t>(positions._version());
  if (!entry.positions.is_same(positions) || !entry.inverse_frequencies.is_same(inverse_frequencies) ||
      entry.version != version) {
    at::NoGradGuard no_grad;
    entry = Entry{positions, inverse_frequencies, version, ft_kernels::rotary_tables(positions, inverse_frequencies)};
  }
  return entry.tables;
}

}  // namespace

at::Tensor apply_rotary_embedding(const at::Tensor& x, const at::Tensor& positions,
                                  const at::Tensor& inverse_frequencies) {
  // A float64 model rotates by float64 angles of the same (float32-valued) frequencies: float32
  // tables would limit it to float32 accuracy.
  if (x.scalar_type() == at::kDouble)
    return ft_kernels::rotary(x, ft_kernels::rotary_tables(positions, inverse_frequencies.to(at::kDouble)));
  return ft_kernels::rotary(x, shared_tables(positions, inverse_frequencies));
}

}  // namespace ft::nn
