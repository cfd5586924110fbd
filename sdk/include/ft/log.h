// Logging for plugins: the host configures one spdlog default logger (format, level, rank
// prefix) and plugins write to it through these calls, so their lines look like the host's.
#pragma once

#include <spdlog/spdlog.h>

namespace ft::log {
using spdlog::debug;
using spdlog::error;
using spdlog::info;
using spdlog::warn;
}  // namespace ft::log
