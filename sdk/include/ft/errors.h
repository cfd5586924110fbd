// Error types that cross the plugin boundary. Every message is complete and user-facing:
// it names the config file and dotted key, or the plugin library, and what was expected.
#pragma once

#include <ft/export.h>

#include <stdexcept>
#include <string>

namespace ft {

class FT_API Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A problem with the user's configuration: `run.toml: optimizer.lr: expected a number, got string "fast"`.
class FT_API ConfigError : public Error {
 public:
  using Error::Error;
};

// A problem loading or registering a plugin library.
class FT_API PluginError : public Error {
 public:
  using Error::Error;
};

}  // namespace ft
