#include "run_identity.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>

namespace ft_loggers {

double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::int64_t unix_time_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string environment_variable(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

}  // namespace ft_loggers
