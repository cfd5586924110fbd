#include "dynamic_quantization.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace ftoptim {

namespace {

// torch.linspace(start, end, steps) in float32 as ATen's CPU kernel computes it: a float step,
// the first half counted up from start and the second half down from end.
std::vector<float> linspace_float(float start, float end, int steps) {
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int halfway = steps / 2;
  std::vector<float> out(static_cast<std::size_t>(steps));
  for (int i = 0; i < steps; ++i)
    out[static_cast<std::size_t>(i)] =
        i < halfway ? start + step * static_cast<float>(i) : end - step * static_cast<float>(steps - i - 1);
  return out;
}

QuantizationMap make_dynamic_map(bool is_signed) {
  constexpr int kMaxExponentBits = 7, kTotalBits = 8;
  constexpr int kNonSignBits = kTotalBits - 1;
  std::vector<float> data;
  for (int i = 0; i < kMaxExponentBits; ++i) {
    const int fraction_items = is_signed ? (1 << (i + kNonSignBits - kMaxExponentBits)) + 1
                                         : (1 << (i + kNonSignBits - kMaxExponentBits + 1)) + 1;
    const std::vector<float> boundaries = linspace_float(0.1f, 1.0f, fraction_items);
    // A Python float times a float32 tensor: the factor is rounded to float32 first.
    const auto scale = static_cast<float>(std::pow(10.0, -(kMaxExponentBits - 1) + i));
    for (std::size_t b = 0; b + 1 < boundaries.size(); ++b) {
      const float mean = (boundaries[b] + boundaries[b + 1]) / 2.0f;
      data.push_back(scale * mean);
      if (is_signed) data.push_back(-scale * mean);
    }
  }
  // 2^(7 - 7) - 1 = 0 additional items; then 0 and 1, and zeros up to 256 (none here).
  data.push_back(0.0f);
  data.push_back(1.0f);
  while (data.size() < 256) data.push_back(0.0f);
  std::sort(data.begin(), data.end());
  QuantizationMap map{};
  std::copy(data.begin(), data.end(), map.begin());
  return map;
}

float lowest_value_of(std::uint32_t key) {
  // Non-negative floats grow with their bits; negative ones are most negative at the range's top.
  const std::uint32_t bits = (key & 0x8000u) ? (key << 16) | 0xFFFFu : key << 16;
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace

CodeLookup::CodeLookup(const QuantizationMap& map) : map_(map) {
  for (std::uint32_t key = 0; key < 65536; ++key) {
    // NaN ranges get code 0; the comparisons in nearest() then keep it.
    const auto above = std::upper_bound(map.begin(), map.end(), lowest_value_of(key));
    last_at_or_below_[key] = static_cast<std::uint8_t>(above == map.begin() ? 0 : above - map.begin() - 1);
  }
}

const CodeLookup& CodeLookup::of(bool is_signed) {
  static const CodeLookup signed_lookup(dynamic_map(true));
  static const CodeLookup unsigned_lookup(dynamic_map(false));
  return is_signed ? signed_lookup : unsigned_lookup;
}

const QuantizationMap& dynamic_map(bool is_signed) {
  static const QuantizationMap signed_map = make_dynamic_map(true);
  static const QuantizationMap unsigned_map = make_dynamic_map(false);
  return is_signed ? signed_map : unsigned_map;
}

std::uint8_t nearest_code(const QuantizationMap& map, float normalized) {
  return CodeLookup::of(&map == &dynamic_map(true)).nearest(normalized);
}

}  // namespace ftoptim
