// Sizes and rates as people write them on a command line: "80GiB", "141 GB", "1.5e9",
// "50GB/s" (decimal units are powers of 1000, binary ones of 1024; no unit: bytes).
#pragma once

#include <string>

namespace fthost {

// Throws ft::ConfigError naming `option` and what was expected. `per_second`: a trailing "/s" is
// accepted (and expected to mean bytes per second).
double parse_byte_size(const std::string& text, const std::string& option, bool per_second = false);

// "512.0 MiB" below a GiB, "1.23 GiB" from there: for people reading a plan or a pre-flight report.
std::string format_bytes(double bytes);
// "450 GB/s", "1.5 GB/s": rates in the decimal units links and disks are sold in.
std::string format_rate(double bytes_per_second);

}  // namespace fthost
