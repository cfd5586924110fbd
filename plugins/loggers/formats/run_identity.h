// Wall-clock time and host name as the TensorBoard and W&B file formats record them.
#pragma once

#include <string>

namespace ft_loggers {

// Seconds since the Unix epoch, with sub-second precision (event wall times, run start times).
double unix_time();

// This machine's host name, or "localhost" when it cannot be read.
std::string host_name();

}  // namespace ft_loggers
