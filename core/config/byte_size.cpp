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
  static const std::array<std::pair<const char*, double>, 9> kUnits{{{"", 1.0},
                                                                     {"B", 1.0},
                                                                     {"KB", 1e3},
                                                                     {"MB", 1e6},
                                                                     {"GB", 1e9},
                                                                     {"TB", 1e12},
                                                                     {"KiB", 1024.0},
                                                                     {"MiB", 1024.0 * 1024.0},
                                                                     {"GiB", 1024.0 * 1024.0 * 1024.0}}};
  for (const auto& [name, factor] : kUnits)
    if (unit == name) return number * factor;
  if (unit == "TiB") return number * 1024.0 * 1024.0 * 1024.0 * 1024.0;
  throw ft::ConfigError("--" + option + " " + text + ": unknown unit \"" + unit + "\"; expected " + expected);
}

std::string format_bytes(double bytes) {
  const double kib = 1024.0, mib = kib * 1024.0, gib = mib * 1024.0;
  if (std::abs(bytes) >= gib) return fmt::format("{:.2f} GiB", bytes / gib);
  if (std::abs(bytes) >= mib) return fmt::format("{:.1f} MiB", bytes / mib);
  if (std::abs(bytes) >= kib) return fmt::format("{:.1f} KiB", bytes / kib);
  return fmt::format("{:.0f} B", bytes);
}

std::string format_rate(double bytes_per_second) {
  if (bytes_per_second >= 1e9) return fmt::format("{:.3g} GB/s", bytes_per_second / 1e9);
  return fmt::format("{:.3g} MB/s", bytes_per_second / 1e6);
}

}  // namespace fthost
