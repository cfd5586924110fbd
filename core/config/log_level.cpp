#include "config/log_level.h"

#include <ft/log.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

namespace fthost {

std::optional<spdlog::level::level_enum> read_log_level(const ft::ConfigNode& root) {
  const auto name = root.get_optional<std::string>("log_level");
  if (!name) return std::nullopt;
  std::string upper = *name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  // Python's logging names and their aliases (WARN, FATAL).
  static const std::pair<const char*, spdlog::level::level_enum> levels[] = {
      {"DEBUG", spdlog::level::debug},   {"INFO", spdlog::level::info}, {"WARNING", spdlog::level::warn},
      {"WARN", spdlog::level::warn},     {"ERROR", spdlog::level::err}, {"CRITICAL", spdlog::level::critical},
      {"FATAL", spdlog::level::critical}};
  for (const auto& [level_name, level] : levels)
    if (upper == level_name) return level;
  root.fail("log_level", "unknown log level \"" + *name +
                             "\"; expected one of DEBUG, INFO, WARNING (or WARN), ERROR, CRITICAL (or FATAL), in "
                             "any case");
}

void apply_log_level(const ft::ConfigNode& root) {
  if (const auto level = read_log_level(root)) spdlog::set_level(*level);
}

}  // namespace fthost
