#include "rotary_embedding.h"

#include <ATen/ATen.h>

#include <cmath>

namespace ft_llama {

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

at::Tensor apply_rotary_embedding(const at::Tensor& x, const at::Tensor& positions,
                                  const at::Tensor& inverse_frequencies) {
  const std::int64_t half = x.size(-1) / 2;
  at::Tensor pos = positions.dim() == 1 ? positions.unsqueeze(0) : positions;                   // [b or 1, s]
  at::Tensor angles = pos.to(at::kFloat).unsqueeze(-1) * inverse_frequencies.to(pos.device());  // [b, s, half]
  at::Tensor cos = angles.cos().unsqueeze(2);                                                   // [b, s, 1, half]
  at::Tensor sin = angles.sin().unsqueeze(2);
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor x1 = xf.narrow(-1, 0, half);
  at::Tensor x2 = xf.narrow(-1, half, half);
  at::Tensor rotated = at::cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1);
  return rotated.to(x.scalar_type());
}

}  // namespace ft_llama
