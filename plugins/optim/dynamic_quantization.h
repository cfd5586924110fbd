// bitsandbytes' dynamic 8-bit data type, as its 8-bit optimizers store their states: 256 codes
// with a decimal exponent (10^-6 ... 10^0) and a linear fraction whose resolution grows with the
// exponent (Dettmers, "8-Bit Approximations for Parallelism in Deep Learning"), applied blockwise:
// each block of 256 values is scaled by its largest magnitude (absmax) into [-1, 1] and every
// value stored as the index of its nearest code.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ftoptim {

// Values per quantization block: bitsandbytes' blockwise optimizers use 256.
constexpr std::int64_t kQuantizationBlock = 256;

using QuantizationMap = std::array<float, 256>;

// bitsandbytes.functional.create_dynamic_map(signed, max_exponent_bits=7, total_bits=8), float32
// as torch computes it, sorted: signed for the first moment, unsigned for the second.
const QuantizationMap& dynamic_map(bool is_signed);

// Finds codes fast: for each float32's top 16 bits (sign, exponent and 7 mantissa bits: a range
// of values 2^-7 wide relative to its magnitude), the last code at or below the range's lowest
// value. Neighbouring codes are at least 0.7% apart relative to their value, so a range holds at
// most one more: two branch-free steps and a comparison find the nearest, where a binary search
// takes eight mispredictable branches.
class CodeLookup {
 public:
  static const CodeLookup& of(bool is_signed);

  // The index of the code nearest to `normalized` (in [-1, 1]); the lower one on a tie.
  std::uint8_t nearest(float normalized) const {
    std::uint32_t bits;
    std::memcpy(&bits, &normalized, sizeof bits);
    std::size_t i = last_at_or_below_[bits >> 16];
    i += static_cast<std::size_t>(i < 255 && map_[i + 1] <= normalized);
    i += static_cast<std::size_t>(i < 255 && map_[i + 1] <= normalized);
    if (i == 255) return 255;
    return static_cast<std::uint8_t>(i + static_cast<std::size_t>((map_[i + 1] - normalized) < (normalized - map_[i])));
  }
  const QuantizationMap& map() const { return map_; }

 private:
  explicit CodeLookup(const QuantizationMap& map);
  const QuantizationMap& map_;
  std::array<std::uint8_t, 65536> last_at_or_below_{};
};

// The index of the code of `map` (one of dynamic_map's) nearest to `normalized`.
std::uint8_t nearest_code(const QuantizationMap& map, float normalized);

}  // namespace ftoptim
