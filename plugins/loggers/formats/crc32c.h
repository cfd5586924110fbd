// CRC-32C (Castagnoli polynomial, reflected, as in iSCSI and TFRecord) and TFRecord's mask.
// No Debian package provides it, and TensorBoard rejects records whose checksum is wrong.
#pragma once

#include <cstdint>
#include <string_view>

namespace ft_loggers {

// `crc` continues a previous checksum; crc32c("123456789") == 0xE3069283.
std::uint32_t crc32c(std::string_view data, std::uint32_t crc = 0);

// TFRecord stores checksums masked, so a CRC over data that itself holds CRCs stays useful.
constexpr std::uint32_t mask_crc32c(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

}  // namespace ft_loggers
