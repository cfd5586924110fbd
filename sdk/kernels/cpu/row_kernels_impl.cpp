// The row kernels of row_kernels.h, written as plain loops the compiler vectorises. This file
// is compiled once per instruction set (FT_KERNEL_ISA names the namespace); no ATen here.
#include <ft_kernels/row_kernels.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#ifndef FT_KERNEL_ISA
#error "FT_KERNEL_ISA must name the instruction set this copy is compiled for"
#endif

namespace ft_kernels {
namespace FT_KERNEL_ISA {
namespace {

inline float load(float v) { return v; }
inline float load(Bf16 v) {
  const std::uint32_t bits = static_cast<std::uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
template <class T>
inline T store(float v);
template <>
inline float store<float>(float v) {
  return v;
}
// Round to nearest even, as c10::BFloat16 does; NaN stays a (quiet) NaN.
template <>
inline Bf16 store<Bf16>(float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const std::uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  return static_cast<Bf16>(v != v ? 0x7FC0u : rounded);
}

// exp(x) for float, branch-free so that loops over it vectorise: x = n ln2 + r with |r| <= ln2/2,
// exp(r) by a degree-6 polynomial (Cephes' expf coefficients, about 1 ulp), 2^n through the
// exponent bits. Below the smallest normal result it returns 0 (torch returns a denormal).
inline float exp_approx(float x) {
  const float clamped = std::min(std::max(x, -87.0f), 88.3762626647949f);
  const float n = (clamped * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
  float r = clamped - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const std::int32_t exponent = (static_cast<std::int32_t>(n) + 127) << 23;
  float two_n;
  std::memcpy(&two_n, &exponent, sizeof two_n);
  return x < -87.0f ? 0.0f : p * two_n;
}

// Sums with 16 independent lanes, added pairwise at the end: vectorisable without
// reassociating, and the same order for the same n on every run.
constexpr int kLanes = 16;
inline float lane_total(float (&acc)[kLanes]) {
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int j = 0; j < width; ++j) acc[j] += acc[j + width];
  return acc[0];
}

// Calls body(i, i % kLanes) for i in [0, n), in order. Whole blocks of kLanes come first as
// fixed-length inner loops: the compiler vectorises those, while a loop indexing `acc[i % kLanes]`
// directly stays scalar. Element i always lands in lane i % kLanes, so sums are bitwise the same.
template <class Body>
inline void for_each_in_lanes(std::int64_t n, Body&& body) {
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int lane = 0; lane < kLanes; ++lane) body(i + lane, lane);
  for (int lane = 0; i < n; ++i, ++lane) body(i, lane);
}

// The largest of lanes that each hold a running std::max: the same value as one running max.
inline float lane_max(float (&lanes)[kLanes]) {
  float max = lanes[0];
  for (int j = 1; j < kLanes; ++j) max = std::max(max, lanes[j]);
  return max;
}

template <class T>
float sum_of_squares(const T* x, std::int64_t n) {
  float acc[kLanes] = {};
  for_each_in_lanes(n, [&](std::int64_t i, int lane) {
    const float v = load(x[i]);
    acc[lane] += v * v;
  });
  return lane_total(acc);
}

template <class T>
void rms_norm_forward(const T* x, const T* scale, T* y, float* rstd, std::int64_t rows, std::int64_t dim, float eps) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * dim;
    T* yr = y + r * dim;
    const float inv = 1.0f / std::sqrt(sum_of_squares(xr, dim) / static_cast<float>(dim) + eps);
    rstd[r] = inv;
    for (std::int64_t i = 0; i < dim; ++i) yr[i] = store<T>(load(store<T>(load(xr[i]) * inv)) * load(scale[i]));
  }
}

template <class T>
void rms_norm_backward(const T* gy, const T* x, const T* scale, const float* rstd, T* gx, float* gscale_partial,
                       std::int64_t rows, std::int64_t dim) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* gyr = gy + r * dim;
    const T* xr = x + r * dim;
    T* gxr = gx + r * dim;
    const float inv = rstd[r];
    float acc[kLanes] = {};
    for_each_in_lanes(dim, [&](std::int64_t i, int lane) {
      const float normed = load(xr[i]) * inv;
      const float g = load(gyr[i]);
      acc[lane] += g * load(scale[i]) * normed;
      gscale_partial[i] += g * normed;
    });
    const float mean_dot = lane_total(acc) / static_cast<float>(dim);
    for (std::int64_t i = 0; i < dim; ++i) {
      const float normed = load(xr[i]) * inv;
      gxr[i] = store<T>(inv * (load(gyr[i]) * load(scale[i]) - normed * mean_dot));
    }
  }
}

template <class T>
void swiglu_forward(const T* a, const T* b, T* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float av = load(a[i]);
    const float sigmoid = 1.0f / (1.0f + exp_approx(-av));
    y[i] = store<T>(av * sigmoid * load(b[i]));
  }
}

template <class T>
void swiglu_backward(const T* gy, const T* a, const T* b, T* ga, T* gb, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float av = load(a[i]), bv = load(b[i]), g = load(gy[i]);
    const float sigmoid = 1.0f / (1.0f + exp_approx(-av));
    ga[i] = store<T>(g * bv * sigmoid * (1.0f + av * (1.0f - sigmoid)));
    gb[i] = store<T>(g * av * sigmoid);
  }
}

template <class T>
void rotary(const T* x, const float* cos, const float* sin, T* y, std::int64_t rows, std::int64_t heads,
            std::int64_t half, bool inverse) {
  const float sign = inverse ? -1.0f : 1.0f;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* c = cos + r * half;
    const float* s = sin + r * half;
    for (std::int64_t h = 0; h < heads; ++h) {
      const T* xv = x + (r * heads + h) * 2 * half;
      T* yv = y + (r * heads + h) * 2 * half;
      for (std::int64_t i = 0; i < half; ++i) {
        const float x1 = load(xv[i]), x2 = load(xv[half + i]);
        const float sn = sign * s[i];
        yv[i] = store<T>(x1 * c[i] - x2 * sn);
        yv[half + i] = store<T>(x2 * c[i] + x1 * sn);
      }
    }
  }
}

// A float row buffer per thread, for bfloat16 rows whose exponentials need full precision.
float* row_buffer(std::int64_t cols) {
  thread_local std::vector<float> buffer;
  if (static_cast<std::int64_t>(buffer.size()) < cols) buffer.resize(static_cast<std::size_t>(cols));
  return buffer.data();
}

template <class T>
void masked_softmax_forward(const T* x, const std::uint8_t* allowed, const std::int64_t* causal_limit, T* p,
                            std::int64_t rows, std::int64_t cols, float scale) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float* e = row_buffer(cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* pr = p + r * cols;
    const std::uint8_t* ar = allowed ? allowed + r * cols : nullptr;
    // Columns past `end` are masked for a causal row; an explicit mask is read per column.
    const std::int64_t end = ar ? cols : std::min(cols, causal_limit[r] + 1);
    float maxima[kLanes];
    std::fill(maxima, maxima + kLanes, kNegInf);
    if (ar) {
      for_each_in_lanes(end, [&](std::int64_t j, int lane) {
        e[j] = ar[j] ? load(xr[j]) * scale : kNegInf;
        maxima[lane] = std::max(maxima[lane], e[j]);
      });
    } else {
      for_each_in_lanes(end, [&](std::int64_t j, int lane) {
        e[j] = load(xr[j]) * scale;
        maxima[lane] = std::max(maxima[lane], e[j]);
      });
    }
    const float max = lane_max(maxima);
    if (max == kNegInf) {
      for (std::int64_t j = 0; j < cols; ++j) pr[j] = store<T>(std::numeric_limits<float>::quiet_NaN());
      continue;
    }
    float acc[kLanes] = {};
    for_each_in_lanes(end, [&](std::int64_t j, int lane) {
      e[j] = exp_approx(e[j] - max);
      acc[lane] += e[j];
    });
    const float inv_sum = 1.0f / lane_total(acc);
    for (std::int64_t j = 0; j < end; ++j) pr[j] = store<T>(e[j] * inv_sum);
    for (std::int64_t j = end; j < cols; ++j) pr[j] = store<T>(0.0f);
  }
}

template <class T>
void masked_softmax_backward(const T* gp, const T* p, T* gx, std::int64_t rows, std::int64_t cols, float scale) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* gr = gp + r * cols;
    const T* pr = p + r * cols;
    T* out = gx + r * cols;
    float acc[kLanes] = {};
    for_each_in_lanes(cols, [&](std::int64_t j, int lane) { acc[lane] += load(gr[j]) * load(pr[j]); });
    const float dot = lane_total(acc);
    for (std::int64_t j = 0; j < cols; ++j) out[j] = store<T>(scale * load(pr[j]) * (load(gr[j]) - dot));
  }
}

template <class T>
float row_logsumexp(const T* xr, std::int64_t cols) {
  float maxima[kLanes];
  std::fill(maxima, maxima + kLanes, -std::numeric_limits<float>::infinity());
  for_each_in_lanes(cols, [&](std::int64_t j, int lane) { maxima[lane] = std::max(maxima[lane], load(xr[j])); });
  const float max = lane_max(maxima);
  if (!std::isfinite(max)) return max;
  float acc[kLanes] = {};
  for_each_in_lanes(cols, [&](std::int64_t j, int lane) { acc[lane] += exp_approx(load(xr[j]) - max); });
  return max + std::log(lane_total(acc));
}

template <class T>
void cross_entropy_forward(const T* logits, const std::int64_t* targets, float* lse, float* loss, std::int64_t rows,
                           std::int64_t cols, std::int64_t ignore_index) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = logits + r * cols;
    lse[r] = row_logsumexp(xr, cols);
    loss[r] = targets[r] == ignore_index ? 0.0f : lse[r] - load(xr[targets[r]]);
  }
}

template <class T>
void cross_entropy_backward(const T* logits, const std::int64_t* targets, const float* lse, T* g, std::int64_t rows,
                            std::int64_t cols, std::int64_t ignore_index, float gloss) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = logits + r * cols;
    T* gr = g + r * cols;
    if (targets[r] == ignore_index) {
      for (std::int64_t j = 0; j < cols; ++j) gr[j] = store<T>(0.0f);
      continue;
    }
    const float shift = lse[r];
    for (std::int64_t j = 0; j < cols; ++j) gr[j] = store<T>(gloss * exp_approx(load(xr[j]) - shift));
    gr[targets[r]] = store<T>(load(gr[targets[r]]) - gloss);
  }
}

template <class T>
RowKernelsFor<T> kernels_for() {
  return {rms_norm_forward<T>,
          rms_norm_backward<T>,
          swiglu_forward<T>,
          swiglu_backward<T>,
          rotary<T>,
          masked_softmax_forward<T>,
          masked_softmax_backward<T>,
          cross_entropy_forward<T>,
          cross_entropy_backward<T>};
}

}  // namespace

RowKernels make_row_kernels(const char* name) { return {name, kernels_for<float>(), kernels_for<Bf16>()}; }

}  // namespace FT_KERNEL_ISA
}  // namespace ft_kernels
