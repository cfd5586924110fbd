#include "config/byte_size.h"

#include <ft/errors.h>

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <utility>

namespace fthost {

double parse_byte_size(const std::string& text, const std::string& option, bool per_second) {
  const std::string expected = per_second ? "a rate such as 50GB/s, 25GiB/s or 1e9 (bytes per second)"
                                          : "a size such as 80GiB, 141GB or 8e10 (bytes)";
  std::string rest = text;
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back()))) rest.pop_back();
  if (per_second && rest.size() >= 2 && rest.compare(rest.size() - 2, 2, "/s") == 0) rest.resize(rest.size() - 2);
  const char* begin = rest.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(number) || number <= 0)
    throw ft::ConfigError("--" + option + " " + text + ": expected " + expected);
  std::string unit(end);
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front()))) unit.erase(unit.begin());
  constexpr double kKiB = 1024.0;
  static const std::array<std::pair<const char*, double>, 10> kUnits{{{"", 1.0},
                                                                      {"B", 1.0},
                                                                      {"KB", 1e3},
                                                                      {"MB", 1e6},
                                                                      {"GB", 1e9},
                                                                      {"TB", 1e12},
                                                                      {"KiB", kKiB},
                                                                      {"MiB", kKiB * kKiB},
                                                                      {"GiB", kKiB * kKiB * kKiB},
                                                                      {"TiB", kKiB * kKiB * kKiB * kKiB}}};
  for (const auto& [name, factor] : kUnits)
    if (unit == name) return number * factor;
  throw ft::ConfigError("--" + option + " " + text + ": unknown unit \"" + unit + "\"; expected " + expected);
}

std::string format_bytes(double bytes) {
  const double mib = bytes / (1024.0 * 1024.0);
  return mib < 1024 ? fmt::format("{:.1f} MiB", mib) : fmt::format("{:.2f} GiB", mib / 1024.0);
}

std::string format_rate(double bytes_per_second) {
  if (bytes_per_second >= 1e9) return fmt::format("{:.3g} GB/s", bytes_per_second / 1e9);
  return fmt::format("{:.3g} MB/s", bytes_per_second / 1e6);
}

}  // namespace fthost
