// Wall-clock time, host name and environment as the loggers record and read them.
#pragma once

#include <cstdint>
#include <string>

namespace ft_loggers {

// Seconds since the Unix epoch, with sub-second precision (event wall times, run start times).
double unix_time();

// Milliseconds since the Unix epoch (MLflow's and Comet's timestamps).
std::int64_t unix_time_ms();

// The environment variable `name`, or "" when it is unset (the services' variables that stand in
// for an unset config key).
std::string environment_variable(const char* name);

// This machine's host name, or "localhost" when it cannot be read.
std::string host_name();

}  // namespace ft_loggers
