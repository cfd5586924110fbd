#include "pil_resize.h"

#include <ft/errors.h>

#include <ATen/ops/empty.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace ft_images {
namespace {

// Pillow's PRECISION_BITS: 8 bits of result, 2 for overflow, in a 32-bit int.
constexpr int kPrecisionBits = 32 - 8 - 2;

// One output position's input span and fixed-point weights.
struct Taps {
  int first = 0;
  std::vector<std::int32_t> weights;
};

double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Pillow's precompute_coeffs (support 1 scaled by the downscaling factor, the span rounded at
// both ends and clipped to the input, the weights normalised to sum to 1) and
// normalize_coeffs_8bpc (rounded half away from zero to 22 fractional bits).
std::vector<Taps> taps(int in_size, int out_size) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = 1.0 * filter_scale;
  const double inverse = 1.0 / filter_scale;  // Pillow multiplies by it (not dividing: the roundings differ)
  std::vector<Taps> out(static_cast<std::size_t>(out_size));
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    const int first = std::max(static_cast<int>(center - support + 0.5), 0);
    const int count = std::min(static_cast<int>(center + support + 0.5), in_size) - first;
    std::vector<double> w(static_cast<std::size_t>(std::max(count, 0)));
    double sum = 0.0;
    for (int x = 0; x < count; ++x) {
      w[static_cast<std::size_t>(x)] = triangle((x + first - center + 0.5) * inverse);
      sum += w[static_cast<std::size_t>(x)];
    }
    Taps& t = out[static_cast<std::size_t>(xx)];
    t.first = first;
    for (double v : w) {
      if (sum != 0.0) v /= sum;
      const double fixed = v * (1 << kPrecisionBits);
      t.weights.push_back(static_cast<std::int32_t>(v < 0 ? -0.5 + fixed : 0.5 + fixed));
    }
  }
  return out;
}

std::uint8_t clip8(std::int32_t sum) { return static_cast<std::uint8_t>(std::clamp(sum >> kPrecisionBits, 0, 255)); }

// One pass along an axis: `in` holds `lines` lines of `in_size` pixels of 3 bytes, `step` bytes
// apart along the axis and `line_step` apart between lines; likewise `out`.
void pass(const std::uint8_t* in, std::uint8_t* out, int lines, const std::vector<Taps>& t, std::ptrdiff_t in_step,
          std::ptrdiff_t in_line, std::ptrdiff_t out_step, std::ptrdiff_t out_line) {
  for (int line = 0; line < lines; ++line) {
    for (std::size_t o = 0; o < t.size(); ++o) {
      for (int c = 0; c < 3; ++c) {
        std::int32_t sum = 1 << (kPrecisionBits - 1);
        const std::uint8_t* src = in + line * in_line + t[o].first * in_step + c;
        for (std::size_t k = 0; k < t[o].weights.size(); ++k)
          sum += static_cast<std::int32_t>(src[static_cast<std::ptrdiff_t>(k) * in_step]) * t[o].weights[k];
        out[line * out_line + static_cast<std::ptrdiff_t>(o) * out_step + c] = clip8(sum);
      }
    }
  }
}

}  // namespace

at::Tensor pil_resize_bilinear(const at::Tensor& rgb, std::int64_t out_height, std::int64_t out_width) {
  if (rgb.dim() != 3 || rgb.size(2) != 3 || rgb.scalar_type() != at::kByte)
    throw ft::Error("PIL resize: expected uint8 pixels [height, width, 3]");
  if (out_height < 1 || out_width < 1) throw ft::Error("PIL resize: the output size must be positive");
  const at::Tensor in = rgb.contiguous();
  const int h = static_cast<int>(in.size(0));
  const int w = static_cast<int>(in.size(1));
  const int oh = static_cast<int>(out_height);
  const int ow = static_cast<int>(out_width);
  const auto horizontal = [&](const at::Tensor& from) {
    const int rows = static_cast<int>(from.size(0)), width = static_cast<int>(from.size(1));
    at::Tensor to = at::empty({rows, ow, 3}, in.options());
    pass(from.data_ptr<std::uint8_t>(), to.data_ptr<std::uint8_t>(), rows, taps(width, ow), 3, 3 * width, 3, 3 * ow);
    return to;
  };
  const auto vertical = [&](const at::Tensor& from) {
    const int height = static_cast<int>(from.size(0)), columns = static_cast<int>(from.size(1));
    at::Tensor to = at::empty({oh, columns, 3}, in.options());
    pass(from.data_ptr<std::uint8_t>(), to.data_ptr<std::uint8_t>(), columns, taps(height, oh), 3 * columns, 3,
         3 * columns, 3);
    return to;
  };
  // Pillow skips a pass whose axis keeps its size (that pass would be the identity). It resizes
  // horizontally first, unless (since Pillow 13, python-pillow/Pillow#9549) the height shrinks by
  // more than twice as many pixels as the width: then vertically first. The order moves a few
  // pixels by one level; this follows Pillow 13, the version the references run.
  const bool need_horizontal = ow != w, need_vertical = oh != h;
  if (need_horizontal && need_vertical && oh < h && h - oh > 2 * (w - ow)) return horizontal(vertical(in));
  at::Tensor out = in;
  if (need_horizontal) out = horizontal(out);
  if (need_vertical) out = vertical(out);
  return need_horizontal || need_vertical ? out : in.clone();
}

}  // namespace ft_images
