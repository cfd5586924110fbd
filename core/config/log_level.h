// log_level, torchtune's top-level key: how much the host (and every plugin, which writes to the
// same spdlog logger) logs during the run. Python's logging level names, case-insensitive, as
// torchtune's utils.get_logger reads them.
#pragma once

#include <ft/config.h>

#include <spdlog/common.h>

#include <optional>

namespace fthost {

// The level `log_level` names; nullopt when the key is absent. Throws ft::ConfigError naming
// the key and the accepted values for any other name.
std::optional<spdlog::level::level_enum> read_log_level(const ft::ConfigNode& root);

// Sets the process's log level from `log_level`, when set.
void apply_log_level(const ft::ConfigNode& root);

}  // namespace fthost
